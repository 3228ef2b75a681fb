/**
 * The web server's view of a GPU runner: the runner's own tRPC client (gpu-runner/src/client.ts) bound to
 * a Runner row's url and the token the web server holds for it, with timeouts, and every connection
 * failure turned into AppError RUNNER_UNAVAILABLE ("runner 'local' unreachable: connect ECONNREFUSED <address>").
 *
 * The messages name an instance runner, never its address: they reach members (a failed run's error, a
 * refused start) and a shared runner's address is its operator's business (docs/security.md). The URL is on
 * the runner's row for those who see its details (features/runners: runner-visibility.ts).
 *
 * The Runner row stores the token hashed (identity) and encrypted at rest (server/runner-secret.ts): any
 * web process can present it. The configured runner's token (server/env.ts) is also always known.
 */
import { createHash } from "node:crypto";
import { TRPCClientError } from "@trpc/client";
import type { z } from "zod";
import { Diagnostic, RESCORE_BUDGET_MS, RescoreResponse, RunnerStatus, StartResult, type ExperimentFiles, type RescoreRequest, type RunKind, type RunSpec } from "@contracts";
import { createRunnerClient } from "@/gpu-runner/src/client";
import { createGuardedFetch } from "@/gpu-runner/src/net/guarded-fetch";
import { AppError, isAppError, rootMessage } from "./errors";
import { env } from "./env";
import { requireRunnerToken } from "./runner-token";
import { decryptRunnerToken, encryptRunnerToken } from "./runner-secret";
import type { DbOrTx } from "./db-types";

/** A RunSpec as the caller writes it (defaults, like `resume`, may be left out). */
export type RunSpecInput = z.input<typeof RunSpec>;

export const tokenHash = (token: string) => createHash("sha256").update(token).digest("hex");

/** Calls that should answer fast (validate compiles TypeScript: allow it a while). */
const TIMEOUTS_MS = { status: 5_000, validate: 60_000, start: 60_000, stop: 60_000, rescore: RESCORE_BUDGET_MS + 60_000 } as const;

export interface RunnerEventHandlers {
  /** A raw event as received; the caller validates it with the RunEvent schema. */
  onEvent(event: unknown): void;
  onError(err: AppError): void;
  /** The runner ended the stream (it does after run.finished). */
  onComplete(): void;
}

export interface RunnerSubscription {
  unsubscribe(): void;
}

export interface RunnerHandle {
  id: string;
  name: string;
  url: string;
  /** null: an instance runner (the operator's); else the workspace that registered it. */
  workspaceId: string | null;
  validate(input: { files: ExperimentFiles; kind: RunKind }): Promise<Diagnostic[]>;
  start(spec: RunSpecInput): Promise<StartResult>;
  /** With `attempt`, only that attempt is stopped (a newer one the run was resumed as is left alone). */
  stop(runId: string, attempt?: number): Promise<void>;
  /** timeoutMs: a heartbeat waits less than the default 5 s (it asks again soon anyway). */
  status(opts?: { timeoutMs?: number }): Promise<RunnerStatus>;
  /** An (edited) reward over stored trajectories: a what-if, the runner writes nothing. */
  rescore(request: RescoreRequest): Promise<RescoreResponse>;
  /** Events of one run with seq > afterSeq, stored ones first, then live ones (onEvent once per event). */
  events(runId: string, afterSeq: number, handlers: RunnerEventHandlers): RunnerSubscription;
}

/** `workspaceId`: null for the instance's runners (the operator's, RUNNER_URL), else the workspace that registered it. */
export type RunnerRow = { id: string; name: string; url: string; tokenHash: string; tokenCipher: string | null; workspaceId: string | null };
export const RUNNER_ROW_SELECT = { id: true, name: true, url: true, tokenHash: true, tokenCipher: true, workspaceId: true } as const;

/**
 * How requests reach a runner: a runner a workspace registered is a URL a user typed, so every connection
 * to it goes through the egress policy (EGRESS_ALLOW); the instance's runners are the operator's, not checked.
 */
function fetchFor(row: RunnerRow): typeof fetch {
  return row.workspaceId === null ? fetch : createGuardedFetch({ field: "url", actor: "the web server", allow: env().EGRESS_ALLOW });
}

export const normalizeRunnerUrl = (url: string) => url.trim().replace(/\/+$/, "");

const ADDRESS = "<address>";
/** An IPv4 address (with its port), and whatever follows a socket error's code ("connect ECONNREFUSED ::1:4100"). */
const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g;
const AFTER_SOCKET_ERROR = /\b(E(?:CONNREFUSED|CONNRESET|TIMEDOUT|HOSTUNREACH|NETUNREACH|ADDRNOTAVAIL|AI_AGAIN|NOTFOUND)) \S+/g;

/**
 * `text` without the runner's address: its URL, host and port, name, and any address a socket error quotes.
 * Only an instance runner's (`workspaceId` null) is the operator's to keep: a workspace's own runner was typed
 * by its admin, and its egress refusals must name it ("url: 127.0.0.1 is a loopback address …").
 */
export function withoutRunnerAddress(text: string, url: string, workspaceId: string | null = null): string {
  if (workspaceId !== null) return text;
  let out = text;
  try {
    const u = new URL(url);
    for (const part of [u.origin, u.host, u.hostname]) if (part) out = out.split(part).join(ADDRESS);
  } catch {
    out = out.split(url).join(ADDRESS);
  }
  return out.replace(AFTER_SOCKET_ERROR, `$1 ${ADDRESS}`).replace(IPV4, ADDRESS);
}

/**
 * Upserts a Runner row (url, token hashed + encrypted). `workspaceId` null/absent = an instance runner,
 * usable by every workspace (the configured one, and test runners). Capacity: the runner's own report
 * until the monitor asks it, unless given.
 */
export async function registerRunner(
  db: DbOrTx,
  input: { name: string; url: string; token: string; workspaceId?: string | null; capacity?: number },
): Promise<RunnerRow> {
  const url = normalizeRunnerUrl(input.url);
  const workspaceId = input.workspaceId ?? null;
  const data = {
    url,
    tokenHash: tokenHash(input.token),
    tokenCipher: encryptRunnerToken(input.token),
    ...(input.capacity ? { capacity: input.capacity, capacityOverride: input.capacity } : {}),
  };
  // Not prisma's upsert: a compound unique key with a null part cannot be named in `where`.
  const existing = await db.runner.findFirst({ where: { name: input.name, workspaceId }, select: { id: true } });
  if (existing) return db.runner.update({ where: { id: existing.id }, data, select: RUNNER_ROW_SELECT });
  return db.runner.create({ data: { ...data, name: input.name, workspaceId }, select: RUNNER_ROW_SELECT });
}

export function tokenFor(row: RunnerRow): string {
  const stored = row.tokenCipher ? decryptRunnerToken(row.tokenCipher) : null;
  if (stored && tokenHash(stored) === row.tokenHash) return stored;
  const e = env();
  if (row.name === e.RUNNER_NAME && e.RUNNER_TOKEN && tokenHash(e.RUNNER_TOKEN) === row.tokenHash) return e.RUNNER_TOKEN;
  throw new AppError(
    "RUNNER_UNAVAILABLE",
    `runner '${row.name}': this web server cannot read its token (registered under another AUTH_SECRET?) — register it again`,
  );
}

/**
 * The runner named `name` that `workspaceId` may use (its own first, then instance runners); default: the
 * configured one, registered on first use.
 */
export async function resolveRunner(db: DbOrTx, name?: string, workspaceId?: string): Promise<RunnerHandle> {
  const e = env();
  const wanted = name ?? e.RUNNER_NAME;
  const rows = await db.runner.findMany({
    where: { name: wanted, OR: [{ workspaceId: null }, ...(workspaceId ? [{ workspaceId }] : [])] },
    select: RUNNER_ROW_SELECT,
  });
  let row: RunnerRow | undefined = rows.find((r) => r.workspaceId !== null) ?? rows[0];
  if (!row && wanted === e.RUNNER_NAME) row = await registerRunner(db, { name: wanted, url: e.RUNNER_URL, token: requireRunnerToken(e) });
  if (!row) throw new AppError("RUNNER_UNAVAILABLE", `no runner named '${wanted}' is registered`);
  return runnerHandle(row);
}

export async function runnerById(db: DbOrTx, id: string): Promise<RunnerHandle> {
  const row = await db.runner.findUnique({ where: { id }, select: RUNNER_ROW_SELECT });
  if (!row) throw new AppError("RUNNER_UNAVAILABLE", `runner ${id} is not registered`);
  return runnerHandle(row);
}

/**
 * Plain HTTP to a runner's non-tRPC routes (checkpoint archives, the chat pass-through: gpu-runner/src/http/
 * routes.ts) with its bearer token. The response comes back whatever its status, for the caller to pass on;
 * no reply at all is RUNNER_UNAVAILABLE. A caller's abort (or timeout) is rethrown as it is.
 */
export async function runnerFetch(db: DbOrTx, runnerId: string, pathname: string, init: RequestInit = {}): Promise<Response> {
  const row = await db.runner.findUnique({ where: { id: runnerId }, select: RUNNER_ROW_SELECT });
  if (!row) throw new AppError("RUNNER_UNAVAILABLE", `runner ${runnerId} is not registered`);
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${tokenFor(row)}`);
  try {
    return await fetchFor(row)(`${row.url}${pathname}`, { ...init, headers });
  } catch (err) {
    if (init.signal?.aborted) throw init.signal.reason ?? err;
    if (answerTimedOut(err)) {
      // The runner took the call and was slow to answer: reachable, so never "unreachable" (that would send an
      // operator after a network that is fine).
      throw new AppError("RUNNER_ERROR", `runner '${row.name}' took the call but sent no answer in time (${withoutRunnerAddress(rootMessage(err), row.url, row.workspaceId)})`, { cause: err });
    }
    throw new AppError("RUNNER_UNAVAILABLE", `runner '${row.name}' unreachable: ${withoutRunnerAddress(rootMessage(err), row.url, row.workspaceId)}`, { cause: err });
  }
}

/** undici's "Headers Timeout Error" / "Body Timeout Error": connected and sent, then no answer for its timeout. */
function answerTimedOut(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT") return true;
  }
  return false;
}

/** A reply from the runner (it answered with an error) vs. no reply at all (unreachable). */
function unavailable(row: RunnerRow, err: unknown): AppError {
  if (isAppError(err)) return err;
  if (err instanceof TRPCClientError && err.data) {
    return new AppError("RUNNER_ERROR", `runner '${row.name}' refused the call: ${withoutRunnerAddress(err.message, row.url, row.workspaceId)}`, { cause: err });
  }
  return new AppError("RUNNER_UNAVAILABLE", `runner '${row.name}' unreachable: ${withoutRunnerAddress(rootMessage(err), row.url, row.workspaceId)}`, { cause: err });
}

async function withTimeout<T>(row: RunnerRow, what: string, ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
  try {
    return await fn(ctl.signal);
  } catch (err) {
    if (ctl.signal.aborted) {
      throw new AppError("RUNNER_UNAVAILABLE", `runner '${row.name}' unreachable: ${what} timed out after ${ms / 1000} s`);
    }
    throw unavailable(row, err);
  } finally {
    clearTimeout(timer);
  }
}

export function runnerHandle(row: RunnerRow, token: string = tokenFor(row)): RunnerHandle {
  const client = createRunnerClient(row.url, token, { fetch: fetchFor(row) });
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    workspaceId: row.workspaceId,
    async validate(input) {
      const res = await withTimeout(row, "validate", TIMEOUTS_MS.validate, (signal) => client.validate.mutate(input, { signal }));
      return res.diagnostics.map((d) => Diagnostic.parse(d));
    },
    async start(spec) {
      const res = await withTimeout(row, "start", TIMEOUTS_MS.start, (signal) => client.start.mutate(spec, { signal }));
      return StartResult.parse(res);
    },
    async stop(runId, attempt) {
      await withTimeout(row, "stop", TIMEOUTS_MS.stop, (signal) => client.stop.mutate({ run_id: runId, ...(attempt !== undefined ? { attempt } : {}) }, { signal }));
    },
    async status(opts) {
      const res = await withTimeout(row, "status", opts?.timeoutMs ?? TIMEOUTS_MS.status, (signal) => client.status.query(undefined, { signal }));
      return RunnerStatus.parse(res);
    },
    async rescore(request) {
      const res = await withTimeout(row, "rescore", TIMEOUTS_MS.rescore, (signal) => client.rescore.mutate(request, { signal }));
      return RescoreResponse.parse(res);
    },
    events(runId, afterSeq, handlers) {
      // In batches: one SSE message per batch, not per event, is what lets a catching-up stream keep up
      // with ingestion (a message each held it near 1,000 events/s on a busy 2-core machine).
      const sub = client.eventBatches.subscribe(
        { run_id: runId, after_seq: afterSeq },
        {
          onData: (value: unknown) => {
            // tracked(id, batch) arrives as { id, data } on some transports: unwrap it.
            const v = value as { id?: unknown; data?: unknown };
            const batch = Array.isArray(value) ? value : v && typeof v === "object" && Array.isArray(v.data) ? v.data : [value];
            for (const e of batch) handlers.onEvent(e);
          },
          onError: (err: unknown) => handlers.onError(unavailable(row, err)),
          onComplete: () => handlers.onComplete(),
        },
      );
      return { unsubscribe: () => sub.unsubscribe() };
    },
  };
}
