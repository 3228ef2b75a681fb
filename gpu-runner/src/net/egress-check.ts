/**
 * Resolving a host the way a connection would and holding every address it gives to the egress policy:
 * used by the guarded fetch at connect time (the check that counts: DNS rebinding cannot slip a second
 * answer past it, because the socket connects to the address checked here), and ahead of time to refuse a
 * URL where it is entered (a webhook, a runner, a judge or MCP server at run start) with a clear message.
 */
import dns from "node:dns";
import net from "node:net";
import { type EgressActor, type EgressAllow, EgressRefusedError, egressRefusal } from "./egress-policy";

export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: LookupAll = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * The address to connect to for `host:port`: an IP literal as it is, a name resolved (all its addresses).
 * Throws EgressRefusedError (its message only the rule) when any address is refused: a name that answers
 * with one public and one internal address is refused as a whole, not tried address by address.
 */
export async function checkedAddress(host: string, port: number, allow: EgressAllow, lookup: LookupAll = systemLookup): Promise<string> {
  const bare = host.replace(/^\[|\]$/g, "");
  const addresses = net.isIP(bare) !== 0 ? [bare] : (await lookup(bare)).map((a) => a.address);
  if (addresses.length === 0) throw new Error(`${bare}: no address found`);
  for (const address of addresses) {
    const refusal = egressRefusal({ host: bare, address, port }, allow);
    if (refusal) throw new EgressRefusedError(refusal);
  }
  return addresses[0]!;
}

export const defaultPort = (url: URL) => (url.port ? Number(url.port) : url.protocol === "https:" ? 443 : 80);

/**
 * Why `field`'s URL may not be sent requests (not http(s), or an address the policy refuses), as a
 * message naming the field and the rule; null when allowed. A name that does not resolve now is not
 * refused here (DNS may be down for a moment): the connection is checked again when it is made.
 */
export async function egressUrlProblem(
  rawUrl: string,
  where: { field: string; actor: EgressActor; allow: EgressAllow; lookup?: LookupAll },
): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return `${where.field}: '${rawUrl}' is not a URL`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${where.field}: ${url.protocol} URLs are not allowed; use http:// or https://`;
  try {
    await checkedAddress(url.hostname, defaultPort(url), where.allow, where.lookup);
    return null;
  } catch (err) {
    if (err instanceof EgressRefusedError) return new EgressRefusedError(err.reason, where).message;
    return null;
  }
}
