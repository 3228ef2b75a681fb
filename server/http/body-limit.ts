/**
 * Request body caps of the web server's doors, and the one reader every route uses to honour them. A body
 * is counted while it streams and refused (413) at the first chunk past the door's cap; a declared
 * content-length over the cap is refused before anything is read; routes that take no body (GET, HEAD)
 * refuse one. Without this a signed-in caller's 300 MB tRPC body was read whole before the 400.
 *
 *   door   what                                     cap
 *   trpc   /api/trpc and any route without its own  MAX_REQUEST_BYTES (20 MB)
 *   auth   /api/auth/* (Better Auth)                MAX_AUTH_REQUEST_BYTES (64 KB)
 *   chat   POST /api/v1/chat/completions            4 MiB (and never over MAX_REQUEST_BYTES)
 *          POST /api/art/v1/chat/completions        (the same handler: features/art/server/art-sampling.ts)
 *   art    /api/art/v1/* (OpenPipe ART's client)    32 MiB (trajectory groups with per-token logprobs)
 *   tinker /api/tinker/* (the Tinker SDK)           32 MiB (a forward_backward chunk: the SDK splits at 5 MB)
 *   none   GET and HEAD (exports, downloads, …)     no body at all
 *
 * The stream is never cancelled on a refusal, only left unread: cancelling it would destroy the socket
 * under Node, and the client would see a reset instead of the 413 (the answer carries Connection: close).
 */
import { formatBytes } from "@contracts";
import { JsonDepthScanner, nestedTooDeepMessage } from "@contracts";
import { env, type ServerEnv } from "../env";

export type Door = "trpc" | "auth" | "chat" | "art" | "tinker" | "none";

export interface BodyCap {
  /** Bytes; 0 for a door that takes no body. */
  limit: number;
  /** The setting (or rule) that sets it, named in the refusal so an operator knows what to raise. */
  setting: string;
}

/** A chat request bigger than this is far past any model's context (the runner and the engine cap too). */
export const MAX_CHAT_REQUEST_BYTES = 4 * 1024 * 1024;

/**
 * ART's client sends a whole step's trajectory groups in one body, each sampled reply with its per-token
 * logprobs (and top_logprobs): 64 rollouts of a few thousand tokens reach tens of MB. Fixed, not tied to
 * MAX_REQUEST_BYTES: ART's client cannot split a step.
 */
export const MAX_ART_REQUEST_BYTES = 32 * 1024 * 1024;

/**
 * The Tinker SDK splits a forward_backward into chunks of at most fwdbwd_max_chunk_bytes_count (5 MB, the
 * server's client/config) before it sends; 32 MiB leaves room for a client configured otherwise.
 */
export const MAX_TINKER_REQUEST_BYTES = 32 * 1024 * 1024;

export function capOf(door: Door, e: ServerEnv = env()): BodyCap {
  switch (door) {
    case "trpc":
      return { limit: e.MAX_REQUEST_BYTES, setting: "MAX_REQUEST_BYTES" };
    case "auth":
      return { limit: e.MAX_AUTH_REQUEST_BYTES, setting: "MAX_AUTH_REQUEST_BYTES" };
    case "chat":
      return { limit: Math.min(MAX_CHAT_REQUEST_BYTES, e.MAX_REQUEST_BYTES), setting: "the chat endpoint's cap" };
    case "art":
      return { limit: MAX_ART_REQUEST_BYTES, setting: "the ART endpoint's cap" };
    case "tinker":
      return { limit: MAX_TINKER_REQUEST_BYTES, setting: "the Tinker endpoint's cap" };
    case "none":
      return { limit: 0, setting: "no body" };
  }
}

/** The door a request comes in by (the custom server's early check uses it before Next routes the request). */
export function doorOf(method: string | undefined, pathname: string): Door {
  if (method === "GET" || method === "HEAD") return "none";
  if (pathname.startsWith("/api/auth/")) return "auth";
  if (pathname === "/api/v1/chat/completions" || pathname === "/api/art/v1/chat/completions") return "chat";
  if (pathname.startsWith("/api/art/")) return "art";
  if (pathname.startsWith("/api/tinker/")) return "tinker";
  return "trpc";
}

/** A refusal in words, for the door's own error shape. */
export interface BodyRefusal {
  status: 413 | 400;
  message: string;
}

export function tooLarge(cap: BodyCap): BodyRefusal {
  return { status: 413, message: `the request body is over ${formatBytes(cap.limit)} (${cap.setting} = ${cap.limit} bytes); nothing past that was read` };
}

export function noBodyAllowed(method: string, pathname: string): BodyRefusal {
  return { status: 413, message: `${method} ${pathname} takes no request body` };
}

/** content-length as a number (null when absent or not a plain number). */
export function declaredLength(headers: Headers): number | null {
  const raw = headers.get("content-length");
  return raw !== null && /^\d+$/.test(raw.trim()) ? Number(raw) : null;
}

/** True when the request says it carries a body: a non-zero content-length, or any transfer-encoding. */
export function declaresBody(headers: Headers): boolean {
  return (declaredLength(headers) ?? 0) > 0 || headers.has("transfer-encoding");
}

/** A GET or HEAD that carries a body is refused (exports and downloads read none; neither should the server). */
export function refuseBodyOnRead(req: Request): BodyRefusal | null {
  if (req.method !== "GET" && req.method !== "HEAD") return null;
  return declaresBody(req.headers) ? noBodyAllowed(req.method, new URL(req.url).pathname) : null;
}

/** What cappedBody errors with past the cap; `refusal` says it in words. */
export class BodyLimitError extends Error {
  constructor(readonly refusal: BodyRefusal) {
    super(refusal.message);
    this.name = "BodyLimitError";
  }
}

/**
 * The request's body as a stream that errors with `toError(BodyLimitError)` at the first chunk past the
 * cap (at once when the declared length is over it). Null when there is no body. The original stream is
 * read only as the returned one is, and is left unread (not cancelled) after a refusal.
 */
export function cappedBody(req: Request, cap: BodyCap, toError: (e: BodyLimitError) => unknown = (e) => e): ReadableStream<Uint8Array> | null {
  const over = () => toError(new BodyLimitError(tooLarge(cap)));
  if ((declaredLength(req.headers) ?? 0) > cap.limit) {
    return new ReadableStream({
      start(controller) {
        controller.error(over());
      },
    });
  }
  if (!req.body) return null;
  let seen = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (seen > cap.limit) controller.error(over());
      else controller.enqueue(chunk);
    },
  });
  return req.body.pipeThrough(counter, { preventCancel: true });
}

export type CappedRead = { ok: true; bytes: Uint8Array } | ({ ok: false } & BodyRefusal);

/**
 * The whole body, read through cappedBody, for routes that parse it themselves (auth, /api/v1).
 * `maxJsonDepth`: also refuse (400) JSON nested deeper, found as it streams (json-depth.ts).
 */
export async function readCappedBody(req: Request, cap: BodyCap, opts: { maxJsonDepth?: number } = {}): Promise<CappedRead> {
  const stream = cappedBody(req, cap);
  if (!stream) return { ok: true, bytes: new Uint8Array(0) };
  const depth = opts.maxJsonDepth ? new JsonDepthScanner(opts.maxJsonDepth) : null;
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (depth && depth.feed(value) >= 0) return { ok: false, status: 400, message: `the request body is ${nestedTooDeepMessage(depth.max)}` };
      chunks.push(value);
      total += value.byteLength;
    }
  } catch (e) {
    if (e instanceof BodyLimitError) return { ok: false, ...e.refusal };
    throw e;
  } finally {
    reader.releaseLock();
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { ok: true, bytes };
}

/** The same request with a body already read (handlers downstream read it again from memory). */
export function withBody(req: Request, body: Uint8Array | ReadableStream<Uint8Array> | null): Request {
  return new Request(req.url, { method: req.method, headers: req.headers, body, signal: req.signal, duplex: "half" } as RequestInit);
}

/** Headers for a refusal's answer: the connection is closed, so the unread rest of the body goes nowhere. */
export const REFUSAL_HEADERS = { connection: "close" } as const;
