/**
 * The Tinker SDK's futures: every training and sampling call answers `{request_id}` at once, and the SDK
 * polls POST /api/v1/retrieve_future until the work is done. Here a future is the promise of work running in
 * this web process, kept in memory by request id with the workspace it belongs to (another workspace's id
 * reads as unknown), and dropped FUTURE_TTL_MS after it settled.
 *
 * In memory, not in the database: the work runs in this process (the engine call is held open by it), so
 * a restart loses the work as well as its future; the SDK then gets 404 "unknown request", which it raises,
 * and the model's state is what its last save says (docs/tinker.md). One web process per Tinker client:
 * behind a load balancer, route /api/tinker sticky (a future is answered only by the process that runs it).
 */
import { randomUUID } from "node:crypto";
import { createKeyedQueue } from "@/server/keyed-queue";

/** A settled future's answer: JSON, or protobuf bytes (SampleResponse, ForwardBackwardOutput: the SDK reads only those). */
export type FutureResult = { json: unknown } | { proto: Uint8Array; json?: unknown };

/** The SDK's failure categories (tinker types/request_error_category.py). */
export type ErrorCategory = "user" | "server" | "unknown";

/** A failure the caller's request caused, answered as the SDK's RequestFailedResponse with category "user". */
export class TinkerUserError extends Error {
  constructor(
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
    this.name = "TinkerUserError";
  }
}

interface Entry {
  workspaceId: string;
  state: "pending" | "done" | "failed";
  settled: Promise<void>;
  result?: FutureResult;
  error?: { message: string; category: ErrorCategory };
  settledAt?: number;
}

export const FUTURE_TTL_MS = 60 * 60_000;
const futures = new Map<string, Entry>();

function sweep(now: number): void {
  for (const [id, f] of futures) if (f.settledAt !== undefined && now - f.settledAt > FUTURE_TTL_MS) futures.delete(id);
}

/** Starts `work` and answers its request id at once. A throw settles the future as failed (never unhandled). */
export function startFuture(workspaceId: string, work: () => Promise<FutureResult>): string {
  sweep(Date.now());
  const id = `tfut_${randomUUID().replace(/-/g, "")}`;
  const entry = { workspaceId, state: "pending" } as Entry;
  futures.set(id, entry);
  entry.settled = work().then(
    (result) => {
      entry.state = "done";
      entry.result = result;
      entry.settledAt = Date.now();
    },
    (err: unknown) => {
      entry.state = "failed";
      const user = err instanceof TinkerUserError;
      entry.error = { message: err instanceof Error ? err.message : String(err), category: user ? "user" : "server" };
      entry.settledAt = Date.now();
      if (!user) process.stderr.write(`tinker future ${id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    },
  );
  return id;
}

export type FutureView = { state: "unknown" } | { state: "pending" } | { state: "done"; result: FutureResult } | { state: "failed"; message: string; category: ErrorCategory };

/**
 * The future as the workspace sees it, after waiting up to `waitMs` for it to settle: the SDK polls each
 * future until it is done (45 s per poll), so holding a poll open answers sooner and spares it a
 * "try_again" warning per round trip. Another workspace's id, or an expired one, is unknown at once.
 */
export async function awaitFuture(workspaceId: string, id: string, waitMs: number): Promise<FutureView> {
  const f = futures.get(id);
  if (f && f.workspaceId === workspaceId && f.state === "pending") {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([f.settled, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
  }
  return viewFuture(workspaceId, id);
}

/** The future as the workspace sees it now. */
export function viewFuture(workspaceId: string, id: string): FutureView {
  const f = futures.get(id);
  if (!f || f.workspaceId !== workspaceId) return { state: "unknown" };
  if (f.state === "pending") return { state: "pending" };
  if (f.state === "done") return { state: "done", result: f.result! };
  return { state: "failed", message: f.error!.message, category: f.error!.category };
}

/**
 * Runs `fn` after the calls queued before it for the same key (a model) in this process: the SDK numbers a
 * model's calls (seq_id) and expects them applied in that order — forward_backward, then optim_step, then the
 * save — and with parallel_fwdbwd_chunks off (client/config) it sends them in that order. Its own queue: a
 * model's call records its events through art-log's appendEvents, which queues by run too.
 */
export const inOrder = createKeyedQueue();
