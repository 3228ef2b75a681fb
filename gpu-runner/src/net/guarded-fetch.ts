/**
 * A fetch whose every connection obeys the egress policy: an undici Agent whose `connect` resolves the
 * host itself, checks every address (egress-check.ts) and connects to the checked one (TLS keeps the
 * name for SNI and certificate checks). IP literals and names go the same way, and so does each redirect
 * hop, since a hop to another origin is a new connection. Checking the URL before fetching would not be
 * enough: the name could resolve differently a moment later (DNS rebinding).
 *
 * undici's own fetch, not Node's global one: a dispatcher must come from the same undici as the fetch
 * that uses it, and the global fetch's undici is whatever this Node bundles.
 *
 *   const fetch = createGuardedFetch({ field: "judge.base_url", actor: "this runner", allow: env.EGRESS_ALLOW });
 *   await fetch("http://127.0.0.1:9/v1/models"); // throws "judge.base_url: 127.0.0.1 is a loopback address; …"
 */
import net from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import { checkedAddress, type LookupAll } from "./egress-check";
import { type EgressActor, type EgressAllow, EgressRefusedError, egressRefusalIn } from "./egress-policy";

export interface GuardedFetchOptions {
  /** The field the URL came from, for messages: "judge.base_url", "mcp.servers.web.url", "webhook url". */
  field: string;
  actor: EgressActor;
  allow: EgressAllow;
  /** How names are resolved (tests); dns.lookup with all addresses by default. */
  lookup?: LookupAll;
}

/** One Agent (and its connection pools) per allow-list and resolver, shared by every guarded fetch using them. */
const agents = new WeakMap<EgressAllow, Map<LookupAll | undefined, Agent>>();

function guardedAgent(allow: EgressAllow, lookup: LookupAll | undefined): Agent {
  let byLookup = agents.get(allow);
  if (!byLookup) agents.set(allow, (byLookup = new Map()));
  let agent = byLookup.get(lookup);
  if (!agent) {
    const connect = buildConnector({});
    agent = new Agent({
      connect: (options, callback) => {
        const host = options.hostname.replace(/^\[|\]$/g, "");
        const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
        checkedAddress(host, port, allow, lookup).then(
          (address) => connect({ ...options, hostname: address, servername: options.servername || (net.isIP(host) ? undefined : host) }, callback),
          (err: Error) => callback(err, null),
        );
      },
    });
    byLookup.set(lookup, agent);
  }
  return agent;
}

/** What a Request passed as fetch's first argument carries, as init (undici's fetch knows only its own Request class). */
function requestParts(input: string | URL | Request, init: RequestInit | undefined): [string, RequestInit | undefined] {
  if (typeof input === "string" || input instanceof URL) return [String(input), init];
  const fromRequest: RequestInit & { duplex?: "half" } = { method: input.method, headers: input.headers, signal: input.signal, redirect: input.redirect };
  if (input.body) Object.assign(fromRequest, { body: input.body, duplex: "half" });
  return [input.url, { ...fromRequest, ...init }];
}

export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  const agent = guardedAgent(options.allow, options.lookup);
  const where = { field: options.field, actor: options.actor };
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const [url, rest] = requestParts(input, init);
    const protocol = URL.canParse(url) ? new URL(url).protocol : null;
    if (protocol !== "http:" && protocol !== "https:") {
      throw new EgressRefusedError(`${protocol ?? `'${url}'`} URLs are not allowed; use http:// or https://`, where);
    }
    try {
      // The casts: undici's RequestInit and Response are the same web types as the global ones, declared apart.
      return (await undiciFetch(url, { ...(rest as object), dispatcher: agent })) as unknown as Response;
    } catch (err) {
      const refused = egressRefusalIn(err);
      if (refused) throw new EgressRefusedError(refused.reason, where);
      throw err;
    }
  };
  return guarded as typeof fetch;
}
