/**
 * The web server's front door (server/index.ts): a request whose declared body is over its door's cap
 * (body-limit.ts), or a GET/HEAD that declares one, is answered 413 here, before Next routes it or reads a
 * byte of the body, and the connection is closed so the rest is never read. Bodies without a declared
 * length (chunked) are counted by the route's own reader.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ServerEnv } from "../env";
import { capOf, doorOf, noBodyAllowed, tooLarge, type BodyRefusal } from "./body-limit";

export function declaredOversize(req: IncomingMessage, e: ServerEnv): BodyRefusal | null {
  const pathname = (req.url ?? "/").split("?")[0] ?? "/";
  const door = doorOf(req.method, pathname);
  const raw = req.headers["content-length"];
  const declared = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : 0;
  if (door === "none") return declared > 0 || req.headers["transfer-encoding"] !== undefined ? noBodyAllowed(req.method ?? "GET", pathname) : null;
  const cap = capOf(door, e);
  return declared > cap.limit ? tooLarge(cap) : null;
}

/** True when the request was refused (and answered) here. */
export function refuseDeclaredOversize(req: IncomingMessage, res: ServerResponse, e: ServerEnv): boolean {
  const refusal = declaredOversize(req, e);
  if (!refusal) return false;
  const body = JSON.stringify({ error: { message: refusal.message } });
  res.writeHead(refusal.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" }).end(body);
  return true;
}
