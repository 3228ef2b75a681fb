/**
 * The egress policy: which addresses the runner and the web server may send a request to on a user's
 * behalf (judge endpoints, MCP http/sse servers, webhooks, workspace-registered runners). Only global
 * unicast addresses, unless the operator's allow-list (EGRESS_ALLOW) names the address, its range or the
 * host name. Pure decisions here; resolving names and connecting is egress-check.ts / guarded-fetch.ts.
 *
 * Address ranges come from ipaddr.js (its SpecialRanges track the IANA registries) rather than a list
 * written here; the one form it does not unwrap, IPv4-compatible IPv6 (::a.b.c.d), is unwrapped below.
 */
import net from "node:net";
import ipaddr from "ipaddr.js";
import { z } from "zod";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** An operator's EGRESS_ALLOW, parsed: ranges (an address is a /32 or /128) and host names, each maybe for one port. */
export interface EgressAllow {
  readonly ranges: readonly { range: [Address, number]; port: number | null; text: string }[];
  readonly hosts: readonly { name: string; port: number | null; text: string }[];
}

/** Nothing allowed beyond the public internet: the default everywhere the allow-list is not passed in. */
export const NO_EGRESS_EXCEPTIONS: EgressAllow = Object.freeze({ ranges: [], hosts: [] });

/** Who is refusing, for messages: "this runner" or "the web server". */
export type EgressActor = "this runner" | "the web server";

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?)*$/;

const normalName = (name: string) => name.toLowerCase().replace(/\.$/, "");

function parsePort(text: string): number | null {
  if (!/^\d{1,5}$/.test(text)) return null;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : null;
}

/** One entry: `10.0.0.0/8`, `fd00::/8`, `127.0.0.1`, `127.0.0.1:4100`, `[::1]:4100`, `gpu-box.lan`, `gpu-box.lan:4100`. */
function parseEntry(text: string): { range: [Address, number]; port: number | null; text: string } | { name: string; port: number | null; text: string } | null {
  if (text.includes("/")) {
    if (!ipaddr.isValidCIDR(text)) return null;
    const [address, bits] = ipaddr.parseCIDR(text);
    return { range: [address, bits], port: null, text };
  }
  let host = text;
  let port: number | null = null;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2] !== undefined) {
      port = parsePort(bracketed[2]);
      if (port === null) return null;
    }
  } else if (net.isIPv6(text)) {
    host = text;
  } else if (text.includes(":")) {
    const at = text.lastIndexOf(":");
    host = text.slice(0, at);
    port = parsePort(text.slice(at + 1));
    if (port === null) return null;
  }
  // net.isIP, not ipaddr.isValid: the latter also takes "0x7f.1"-style forms nobody writes in a setting.
  const family = net.isIP(host);
  if (family !== 0) return { range: [ipaddr.parse(host), family === 4 ? 32 : 128], port, text };
  if (bracketed) return null;
  const name = normalName(host);
  return HOST_NAME.test(name) ? { name, port, text } : null;
}

/** Parse EGRESS_ALLOW: comma-separated CIDR ranges, addresses and host names, each optionally `:port`. */
export function parseEgressAllow(text: string): { ok: true; allow: EgressAllow } | { ok: false; error: string } {
  const ranges: EgressAllow["ranges"][number][] = [];
  const hosts: EgressAllow["hosts"][number][] = [];
  for (const raw of text.split(",")) {
    const entry = raw.trim();
    if (!entry) continue;
    const parsed = parseEntry(entry);
    if (!parsed) {
      return { ok: false, error: `EGRESS_ALLOW: '${entry}' is not a CIDR range (10.0.0.0/8), an address (127.0.0.1, [::1]:4100) or a host name (gpu-box.lan:4100)` };
    }
    if ("range" in parsed) ranges.push(parsed);
    else hosts.push(parsed);
  }
  return { ok: true, allow: { ranges, hosts } };
}

/** An allow-list from text that is known to be valid (tests, fixed settings); throws the parse error otherwise. */
export function egressAllow(text: string): EgressAllow {
  const parsed = parseEgressAllow(text);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.allow;
}

/** The EGRESS_ALLOW setting as both environment modules (server/env.ts, gpu-runner/src/env.ts) parse it. */
export const EgressAllowSetting = z
  .string()
  .default("")
  .transform((text, ctx): EgressAllow => {
    const parsed = parseEgressAllow(text);
    if (parsed.ok) return parsed.allow;
    ctx.issues.push({ code: "custom", message: parsed.error, input: text });
    return z.NEVER;
  });

/** ::a.b.c.d (deprecated IPv4-compatible IPv6): the first 96 bits zero, and not :: or ::1 themselves. */
function ipv4Compatible(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = address.parts;
  if (p.slice(0, 6).some((x) => x !== 0) || (p[6] === 0 && (p[7] === 0 || p[7] === 1))) return null;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

/** The address itself, and the IPv4 address an IPv4-mapped or -compatible IPv6 form stands for. */
function forms(address: Address): { address: Address; embedded: ipaddr.IPv4 | null } {
  if (address.kind() !== "ipv6") return { address, embedded: null };
  const v6 = address as ipaddr.IPv6;
  return { address, embedded: v6.isIPv4MappedAddress() ? v6.toIPv4Address() : ipv4Compatible(v6) };
}

const RANGE_WORDS: Record<string, string> = {
  loopback: "a loopback address",
  linkLocal: "a link-local address",
  private: "a private (RFC 1918) address",
  uniqueLocal: "a unique-local IPv6 address",
  carrierGradeNat: "a carrier-grade NAT (100.64.0.0/10) address",
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
};
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"]);

/** Why an address is not one requests may go to ("a loopback address"), or null for a global unicast one. */
function rangeRule(address: Address): string | null {
  const range = address.range();
  if (range === "unicast") return null;
  if (METADATA.has(address.toNormalizedString()) || METADATA.has(address.toString())) return "a link-local address (the cloud metadata service)";
  return RANGE_WORDS[range] ?? `a reserved address (${range})`;
}

/** Why requests may not go to `address` (an IP in text), or null when it is a global unicast address. */
export function addressRule(address: string): string | null {
  const { address: parsed, embedded } = forms(ipaddr.parse(address));
  if (embedded) {
    const inner = rangeRule(embedded);
    return inner === null ? null : `the IPv4-mapped form of ${embedded.toString()}, ${inner}`;
  }
  return rangeRule(parsed);
}

function inRange(address: Address, range: [Address, number]): boolean {
  return address.kind() === range[0].kind() && address.match(range);
}

/**
 * Whether the operator allows this connection: `host` as the URL named it (a name or an address),
 * `address` the one resolved from it that the socket would connect to, `port` the port.
 */
export function allowListed(target: { host: string; address: string; port: number }, allow: EgressAllow): boolean {
  const name = normalName(target.host);
  if (allow.hosts.some((h) => h.name === name && (h.port === null || h.port === target.port))) return true;
  const { address, embedded } = forms(ipaddr.parse(target.address));
  return allow.ranges.some(
    (r) => (r.port === null || r.port === target.port) && (inRange(address, r.range) || (embedded !== null && inRange(embedded, r.range))),
  );
}

/**
 * The egress decision for one address a request would connect to: null = allowed, otherwise why not
 * ("127.0.0.1 is a loopback address", "localhost resolves to ::1, a loopback address").
 */
export function egressRefusal(target: { host: string; address: string; port: number }, allow: EgressAllow): string | null {
  if (allowListed(target, allow)) return null;
  const rule = addressRule(target.address);
  if (rule === null) return null;
  const host = target.host.replace(/^\[|\]$/g, "");
  return net.isIP(host) !== 0 ? `${host} is ${rule}` : `${host} resolves to ${target.address}, ${rule}`;
}

/** A request refused by the egress policy. `reason` is the rule; the message also names the field and who refused. */
export class EgressRefusedError extends Error {
  override readonly name = "EgressRefusedError";

  constructor(
    readonly reason: string,
    where?: { field: string; actor: EgressActor },
  ) {
    super(where ? refusalMessage(where.field, reason, where.actor) : reason);
  }
}

/** `judge.base_url: 127.0.0.1 is a loopback address; this runner sends no requests there unless …`. */
export function refusalMessage(field: string, reason: string, actor: EgressActor): string {
  return `${field}: ${reason}; ${actor} sends no requests there unless its operator allows it in EGRESS_ALLOW`;
}

/** The egress refusal somewhere in an error's cause chain (fetch, the OpenAI client and tRPC all wrap it). */
export function egressRefusalIn(err: unknown): EgressRefusedError | null {
  let current: unknown = err;
  for (let depth = 0; current instanceof Error && depth < 8; depth++) {
    if (current instanceof EgressRefusedError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}
