import { describe, expect, it } from "vitest";
import { withoutRunnerAddress } from "./runner-client";

describe("runner errors without the runner's address", () => {
  it("drops the URL, host and port, the host name, and what a socket error quotes", () => {
    expect(withoutRunnerAddress("connect ECONNREFUSED 127.0.0.1:4100", "http://127.0.0.1:4100")).toBe("connect ECONNREFUSED <address>");
    expect(withoutRunnerAddress("fetch http://gpu-box.internal:4100/trpc failed", "http://gpu-box.internal:4100")).toBe("fetch <address>/trpc failed");
    expect(withoutRunnerAddress("getaddrinfo ENOTFOUND gpu-box.internal", "http://gpu-box.internal:4100")).toBe("getaddrinfo ENOTFOUND <address>");
    // A name that resolved to an address the error quotes, IPv4 or IPv6.
    expect(withoutRunnerAddress("connect ETIMEDOUT 10.1.2.3:4100", "http://gpu-box:4100")).toBe("connect ETIMEDOUT <address>");
    expect(withoutRunnerAddress("connect ECONNREFUSED ::1:4100", "http://localhost:4100")).toBe("connect ECONNREFUSED <address>");
    expect(withoutRunnerAddress("status timed out after 5 s", "http://127.0.0.1:4100")).toBe("status timed out after 5 s");
  });
});

describe("a workspace's own runner", () => {
  it("keeps its address in errors: its admin typed it, and egress refusals name it", () => {
    expect(withoutRunnerAddress("url: 127.0.0.1 is a loopback address", "http://127.0.0.1:4100", "ws-1")).toBe("url: 127.0.0.1 is a loopback address");
  });
});
