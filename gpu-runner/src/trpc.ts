/**
 * The runner's tRPC init. Plain JSON on the wire (no superjson): every contract is JSON-native (numbers,
 * strings, arrays; timestamps are epoch ms), so a client in any language can call the runner with plain
 * HTTP — queries are GET /<proc>?input=<json>, mutations POST /<proc> with a JSON body, the events
 * subscription is Server-Sent Events. Every procedure requires `Authorization: Bearer <RUNNER_TOKEN>`.
 */
import { timingSafeEqual, createHash } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { initTRPC, TRPCError } from "@trpc/server";
import type { CpuShareMode } from "../../contracts";
import { type RunManager } from "./loop/run-manager";

export interface RunnerContext {
  manager: RunManager;
  authorized: boolean;
  /** What status() tells the web server's pool about this runner besides its runs. */
  pool: { models: string[]; capacity: number; cpu_share: { mode: CpuShareMode; reason?: string } };
}

/** Constant-time token check (hashing first makes the lengths equal, so length leaks nothing). */
export function tokenMatches(presented: string | null | undefined, expected: string): boolean {
  if (!presented) return false;
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

export function bearerToken(req: Pick<IncomingMessage, "headers">): string | null {
  const header = req.headers.authorization;
  const value = Array.isArray(header) ? header[0] : header;
  const m = value ? /^Bearer\s+(.+)$/i.exec(value.trim()) : null;
  return m ? (m[1] as string) : null;
}

const t = initTRPC.context<RunnerContext>().create({
  isDev: false, // never send stack traces to clients
  sse: {
    // Keep-alives let clients and proxies tell an idle run from a dead connection.
    ping: { enabled: true, intervalMs: 10_000 },
    client: { reconnectAfterInactivityMs: 30_000 },
  },
});

export const router = t.router;

/** Every runner procedure: the web server authenticates with the shared bearer token. */
export const authedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.authorized) throw new TRPCError({ code: "UNAUTHORIZED", message: "missing or wrong runner token" });
  return next({ ctx });
});
