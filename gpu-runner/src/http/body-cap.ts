/**
 * Request body caps at the runner's door, before tRPC or a plain route reads anything: a declared
 * content-length over the route's cap, or a GET/HEAD that declares a body, is answered 413 at once and
 * the connection closed, so the rest is never read. Bodies without a declared length are counted as they
 * stream (tRPC's maxBodySize, routes.ts readBody, run-import.ts byteLimit). The web server is the only
 * caller, but it holds RUNNER_TOKEN on behalf of every workspace: the cap holds whoever sends.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** content-length as a number (0 when absent or not a plain number). */
export function declaredBytes(req: IncomingMessage): number {
  const raw = req.headers["content-length"];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : 0;
}

/** True when the request says it carries a body. */
export function declaresBody(req: IncomingMessage): boolean {
  return declaredBytes(req) > 0 || req.headers["transfer-encoding"] !== undefined;
}

export function tooLargeMessage(limit: number, setting: string): string {
  return `the request body is over ${limit} bytes (${setting}); nothing past that was read`;
}

export function noBodyMessage(req: IncomingMessage): string {
  return `${req.method ?? "GET"} ${(req.url ?? "").split("?")[0]} takes no request body`;
}

/**
 * Answers 413 with `body` (JSON) and closes the connection. The body's shape is the caller's: tRPC's error
 * shape for the tRPC API, OpenAI's for the plain routes.
 */
export function sendRefusal(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(413, { "content-type": "application/json", "content-length": Buffer.byteLength(text), connection: "close" }).end(text);
}

/** tRPC's error shape, so the web server's tRPC client reads the message as from any other refusal. */
export function trpcTooLarge(message: string): unknown {
  return { error: { message, code: -32600, data: { code: "PAYLOAD_TOO_LARGE", httpStatus: 413 } } };
}
