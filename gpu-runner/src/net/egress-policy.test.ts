/**
 * The egress policy's decisions: which addresses are refused and why, the IPv4-mapped/-compatible forms,
 * EGRESS_ALLOW's grammar, and the URL check that runs where a URL is entered (with a stub resolver: a
 * name that resolves to 127.0.0.1 is refused like 127.0.0.1). No request is sent anywhere here.
 *   npx vitest run --project unit gpu-runner/src/net/egress-policy.test.ts
 */
import { describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "../env";
import { loadEnv as loadServerEnv } from "@/server/env";
import { egressUrlProblem } from "./egress-check";
import { addressRule, egressAllow, egressRefusal, NO_EGRESS_EXCEPTIONS, parseEgressAllow } from "./egress-policy";

const allow = egressAllow;

describe("addressRule", () => {
  it.each([
    ["127.0.0.1", "a loopback address"],
    ["127.0.0.2", "a loopback address"],
    ["::1", "a loopback address"],
    ["169.254.169.254", "a link-local address (the cloud metadata service)"],
    ["169.254.1.1", "a link-local address"],
    ["fe80::1", "a link-local address"],
    ["fd00:ec2::254", "a link-local address (the cloud metadata service)"],
    ["10.1.2.3", "a private (RFC 1918) address"],
    ["172.16.0.1", "a private (RFC 1918) address"],
    ["192.168.1.1", "a private (RFC 1918) address"],
    ["fc00::1", "a unique-local IPv6 address"],
    ["fd12:3456::1", "a unique-local IPv6 address"],
    ["100.64.0.1", "a carrier-grade NAT (100.64.0.0/10) address"],
    ["0.0.0.0", "the unspecified address"],
    ["::", "the unspecified address"],
    ["224.0.0.1", "a multicast address"],
    ["ff02::1", "a multicast address"],
    ["255.255.255.255", "the broadcast address"],
    ["240.0.0.1", "a reserved address (reserved)"],
    ["192.0.2.1", "a reserved address (reserved)"],
    ["::ffff:127.0.0.1", "the IPv4-mapped form of 127.0.0.1, a loopback address"],
    ["::ffff:7f00:1", "the IPv4-mapped form of 127.0.0.1, a loopback address"],
    ["::ffff:169.254.169.254", "the IPv4-mapped form of 169.254.169.254, a link-local address (the cloud metadata service)"],
    ["::127.0.0.1", "the IPv4-mapped form of 127.0.0.1, a loopback address"],
    ["::10.0.0.1", "the IPv4-mapped form of 10.0.0.1, a private (RFC 1918) address"],
  ])("%s is refused: %s", (address, rule) => {
    expect(addressRule(address)).toBe(rule);
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.216.34"])("%s (global unicast) is allowed", (address) => {
    expect(addressRule(address)).toBeNull();
  });
});

describe("egressRefusal", () => {
  it("names the host as written, and what a name resolved to", () => {
    expect(egressRefusal({ host: "127.0.0.1", address: "127.0.0.1", port: 5432 }, NO_EGRESS_EXCEPTIONS)).toBe("127.0.0.1 is a loopback address");
    expect(egressRefusal({ host: "[::1]", address: "::1", port: 80 }, NO_EGRESS_EXCEPTIONS)).toBe("::1 is a loopback address");
    expect(egressRefusal({ host: "localhost", address: "127.0.0.1", port: 80 }, NO_EGRESS_EXCEPTIONS)).toBe(
      "localhost resolves to 127.0.0.1, a loopback address",
    );
    // A public literal is allowed by the policy (no connection is made here).
    expect(egressRefusal({ host: "93.184.216.34", address: "93.184.216.34", port: 443 }, NO_EGRESS_EXCEPTIONS)).toBeNull();
  });

  it("allows what the operator lists: a range, an address, an address on one port, a host name (on one port)", () => {
    const list = allow("10.0.0.0/8, 127.0.0.1:4100, [::1]:4200, fd00::/8, gpu-box.lan, localhost:3000");
    expect(egressRefusal({ host: "10.9.8.7", address: "10.9.8.7", port: 80 }, list)).toBeNull();
    expect(egressRefusal({ host: "127.0.0.1", address: "127.0.0.1", port: 4100 }, list)).toBeNull();
    expect(egressRefusal({ host: "127.0.0.1", address: "127.0.0.1", port: 4101 }, list)).toBe("127.0.0.1 is a loopback address");
    expect(egressRefusal({ host: "::ffff:127.0.0.1", address: "::ffff:127.0.0.1", port: 4100 }, list)).toBeNull();
    expect(egressRefusal({ host: "::1", address: "::1", port: 4200 }, list)).toBeNull();
    expect(egressRefusal({ host: "fd12::1", address: "fd12::1", port: 1 }, list)).toBeNull();
    expect(egressRefusal({ host: "GPU-BOX.lan.", address: "192.168.1.5", port: 9 }, list)).toBeNull();
    expect(egressRefusal({ host: "localhost", address: "127.0.0.1", port: 3000 }, list)).toBeNull();
    expect(egressRefusal({ host: "localhost", address: "127.0.0.1", port: 3001 }, list)).not.toBeNull();
    expect(egressRefusal({ host: "169.254.169.254", address: "169.254.169.254", port: 80 }, list)).not.toBeNull();
  });
});

describe("EGRESS_ALLOW", () => {
  it("parses ranges, addresses, host names and ports, and refuses anything else naming the entry", () => {
    const parsed = allow(" 10.0.0.0/8 ,, 127.0.0.1, [::1]:4100, ::1, gpu-box.lan:4100 ");
    expect(parsed.ranges.map((r) => [r.text, r.port])).toEqual([["10.0.0.0/8", null], ["127.0.0.1", null], ["[::1]:4100", 4100], ["::1", null]]);
    expect(parsed.hosts).toEqual([{ name: "gpu-box.lan", port: 4100, text: "gpu-box.lan:4100" }]);
    for (const bad of ["10.0.0.0/33", "host:99999", "host:", "bad host", "[gpu]:80", "http://x"]) {
      expect(parseEgressAllow(bad), bad).toEqual({ ok: false, error: expect.stringContaining(`EGRESS_ALLOW: '${bad}' is not`) });
    }
  });

  it("is read by both environment modules, with nothing allowed by default", () => {
    const runner = (vars: Record<string, string>) => loadRunnerEnv({ RUNNER_TOKEN: "a-runner-token", ...vars } as Partial<NodeJS.ProcessEnv> as NodeJS.ProcessEnv);
    const server = (vars: Record<string, string>) => loadServerEnv(vars as Partial<NodeJS.ProcessEnv> as NodeJS.ProcessEnv);
    expect(runner({}).EGRESS_ALLOW).toEqual(NO_EGRESS_EXCEPTIONS);
    expect(server({}).EGRESS_ALLOW).toEqual(NO_EGRESS_EXCEPTIONS);
    expect(runner({ EGRESS_ALLOW: "127.0.0.1:4100" }).EGRESS_ALLOW.ranges).toHaveLength(1);
    expect(server({ EGRESS_ALLOW: "gpu-box" }).EGRESS_ALLOW.hosts).toHaveLength(1);
    expect(() => runner({ EGRESS_ALLOW: "nope nope" })).toThrow(/EGRESS_ALLOW: 'nope nope' is not/);
    expect(() => server({ EGRESS_ALLOW: "1.2.3.4/99" })).toThrow(/EGRESS_ALLOW: '1.2.3.4\/99' is not/);
  });
});

describe("egressUrlProblem (where a URL is entered)", () => {
  const where = { field: "judge.base_url", actor: "this runner" as const, allow: NO_EGRESS_EXCEPTIONS };
  const resolvesTo = (address: string) => async () => [{ address, family: address.includes(":") ? 6 : 4 }];

  it("refuses internal addresses, literal or resolved, naming the field and the rule", async () => {
    expect(await egressUrlProblem("http://127.0.0.1:5432/v1", where)).toBe(
      "judge.base_url: 127.0.0.1 is a loopback address; this runner sends no requests there unless its operator allows it in EGRESS_ALLOW",
    );
    expect(await egressUrlProblem("http://[::1]/", where)).toMatch(/^judge\.base_url: ::1 is a loopback address;/);
    expect(await egressUrlProblem("http://[::ffff:127.0.0.1]/", where)).toMatch(/^judge\.base_url: ::ffff:7f00:1 is the IPv4-mapped form of 127\.0\.0\.1, a loopback address;/);
    expect(await egressUrlProblem("http://169.254.169.254/latest/meta-data/", where)).toMatch(/cloud metadata service/);
    expect(await egressUrlProblem("http://0.0.0.0:3000/", where)).toMatch(/0\.0\.0\.0 is the unspecified address/);
    expect(await egressUrlProblem("http://10.1.2.3/", where)).toMatch(/10\.1\.2\.3 is a private \(RFC 1918\) address/);
    // The URL parser's other spellings of 127.0.0.1 are 127.0.0.1.
    expect(await egressUrlProblem("http://2130706433/", where)).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(await egressUrlProblem("http://0x7f.1/", where)).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(await egressUrlProblem("http://localhost:8080/", where)).toMatch(/^judge\.base_url: localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    expect(await egressUrlProblem("http://internal.example/", { ...where, lookup: resolvesTo("10.0.0.7") })).toMatch(
      /internal\.example resolves to 10\.0\.0\.7, a private/,
    );
  });

  it("refuses other schemes and non-URLs", async () => {
    expect(await egressUrlProblem("file:///etc/passwd", where)).toBe("judge.base_url: file: URLs are not allowed; use http:// or https://");
    expect(await egressUrlProblem("gopher://x/", where)).toMatch(/gopher: URLs are not allowed/);
    expect(await egressUrlProblem("not a url", where)).toBe("judge.base_url: 'not a url' is not a URL");
  });

  it("allows public addresses and what the operator lists; an unresolvable name is left to the connection check", async () => {
    expect(await egressUrlProblem("https://93.184.216.34/v1", where)).toBeNull();
    expect(await egressUrlProblem("https://api.example/v1", { ...where, lookup: resolvesTo("93.184.216.34") })).toBeNull();
    expect(await egressUrlProblem("http://127.0.0.1:4100/", { ...where, allow: allow("127.0.0.1:4100") })).toBeNull();
    const failing = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.invalid"), { code: "ENOTFOUND" });
    };
    expect(await egressUrlProblem("http://nowhere.invalid/", { ...where, lookup: failing })).toBeNull();
  });

  it("refuses a name when any of its addresses is refused", async () => {
    const both = async () => [{ address: "93.184.216.34", family: 4 }, { address: "127.0.0.1", family: 4 }];
    expect(await egressUrlProblem("http://mixed.example/", { ...where, lookup: both })).toMatch(/mixed\.example resolves to 127\.0\.0\.1, a loopback address/);
  });
});
