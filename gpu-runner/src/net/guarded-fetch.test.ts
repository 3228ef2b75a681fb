/**
 * The guarded fetch against real HTTP servers on this machine: an allow-listed 127.0.0.1:PORT is reached,
 * a redirect from it to 127.0.0.2 (not allowed) is refused before that server sees anything, `localhost`
 * is refused like 127.0.0.1, a name that resolved to a public address when the URL was entered but to
 * 127.0.0.1 when connecting (DNS rebinding) is refused, and refused literals never open a socket.
 *   npx vitest run --project unit gpu-runner/src/net/guarded-fetch.test.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { egressUrlProblem } from "./egress-check";
import { EgressRefusedError, egressAllow } from "./egress-policy";
import { createGuardedFetch } from "./guarded-fetch";

const allow = egressAllow;

interface Recorder {
  server: http.Server;
  port: number;
  requests: string[];
}

async function listen(host: string, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Recorder> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, requests };
}

let first: Recorder;
let second: Recorder;

beforeAll(async () => {
  // 127.0.0.2: the whole of 127.0.0.0/8 is this machine's loopback, so a second "host" needs no setup.
  second = await listen("127.0.0.2", (_req, res) => res.end("you reached 127.0.0.2"));
  first = await listen("127.0.0.1", (req, res) => {
    if (req.url === "/away") res.writeHead(302, { location: `http://127.0.0.2:${second.port}/inside` }).end();
    else if (req.url === "/here") res.writeHead(302, { location: "/ok" }).end();
    else res.end(`ok ${req.method}`);
  });
});
afterAll(async () => {
  for (const r of [first, second]) await new Promise((done) => r?.server.close(done));
});

const where = { field: "judge.base_url", actor: "this runner" as const };

describe("createGuardedFetch", () => {
  it("reaches an allow-listed address and follows a redirect within it", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow(`127.0.0.1:${first.port}`) });
    const res = await fetch(`http://127.0.0.1:${first.port}/here`, { method: "GET" });
    expect(await res.text()).toBe("ok GET");
    expect(first.requests.slice(-2)).toEqual(["GET /here", "GET /ok"]);
  });

  it("refuses a redirect from an allowed 127.0.0.1:PORT to 127.0.0.2, which never sees a request", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow(`127.0.0.1:${first.port}`) });
    const before = first.requests.length;
    await expect(fetch(`http://127.0.0.1:${first.port}/away`)).rejects.toThrow(
      "judge.base_url: 127.0.0.2 is a loopback address; this runner sends no requests there unless its operator allows it in EGRESS_ALLOW",
    );
    expect(first.requests.slice(before)).toEqual(["GET /away"]);
    expect(second.requests).toEqual([]);
  });

  it("refuses 127.0.0.1 when not allow-listed, and `localhost` the same way, without connecting", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow("10.0.0.0/8") });
    const before = first.requests.length;
    await expect(fetch(`http://127.0.0.1:${first.port}/`)).rejects.toThrow(/^judge\.base_url: 127\.0\.0\.1 is a loopback address;/);
    await expect(fetch(`http://localhost:${first.port}/`)).rejects.toThrow(/^judge\.base_url: localhost resolves to (127\.0\.0\.1|::1), a loopback address;/);
    // Allowing the port on another address does not allow this one.
    await expect(createGuardedFetch({ ...where, allow: allow(`127.0.0.2:${first.port}`) })(`http://127.0.0.1:${first.port}/`)).rejects.toThrow(EgressRefusedError);
    expect(first.requests.length).toBe(before);
  });

  it("allows `localhost` by name when the operator lists it", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow(`localhost:${first.port}`), lookup: async () => [{ address: "127.0.0.1", family: 4 }] });
    expect(await (await fetch(`http://localhost:${first.port}/`)).text()).toBe("ok GET");
  });

  it.each([
    ["http://[::1]:59999/", /::1 is a loopback address/],
    ["http://169.254.169.254/latest/meta-data/", /169\.254\.169\.254 is a link-local address \(the cloud metadata service\)/],
    ["http://[::ffff:127.0.0.1]:59999/", /::ffff:7f00:1 is the IPv4-mapped form of 127\.0\.0\.1, a loopback address/],
    ["http://0.0.0.0:59999/", /0\.0\.0\.0 is the unspecified address/],
    ["http://10.20.30.40/", /10\.20\.30\.40 is a private \(RFC 1918\) address/],
    ["http://[fd00::1]/", /fd00::1 is a unique-local IPv6 address/],
    ["http://100.64.0.1/", /100\.64\.0\.1 is a carrier-grade NAT/],
  ])("refuses %s before any socket opens", async (url, rule) => {
    const fetch = createGuardedFetch({ ...where, allow: allow("") });
    await expect(fetch(url)).rejects.toThrow(rule);
  });

  it("refuses a name that rebinds to 127.0.0.1 between the check where it was entered and the connection", async () => {
    let answers = 0;
    // First answer public (the URL check passes and nothing connects), every later one loopback.
    const lookup = async () => [{ address: answers++ === 0 ? "93.184.216.34" : "127.0.0.1", family: 4 }];
    const url = `http://rebind.example:${first.port}/`;
    expect(await egressUrlProblem(url, { ...where, allow: allow(""), lookup })).toBeNull();
    const before = first.requests.length;
    await expect(createGuardedFetch({ ...where, allow: allow(""), lookup })(url)).rejects.toThrow(
      /^judge\.base_url: rebind\.example resolves to 127\.0\.0\.1, a loopback address;/,
    );
    expect(first.requests.length).toBe(before);
  });

  it("refuses schemes other than http(s)", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow("") });
    await expect(fetch("file:///etc/passwd")).rejects.toThrow("judge.base_url: file: URLs are not allowed; use http:// or https://");
    await expect(fetch("data:text/plain,hi")).rejects.toThrow(/data: URLs are not allowed/);
  });

  it("takes a Request as well as a URL", async () => {
    const fetch = createGuardedFetch({ ...where, allow: allow(`127.0.0.1:${first.port}`) });
    const res = await fetch(new Request(`http://127.0.0.1:${first.port}/req`, { method: "POST", body: "x" }));
    expect(await res.text()).toBe("ok POST");
  });
});
