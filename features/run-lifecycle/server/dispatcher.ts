/**
 * The run queue's dispatcher. The Run row IS the job: a `queued` run with no runnerId waits; claiming it
 * sets runnerId (still `queued`: "being started there"); runner.start then makes it `running`.
 *
 * Why `SELECT … FOR UPDATE SKIP LOCKED` on Run rows and not pg-boss: (1) one source of truth for a run's
 * status — a second job table would have to be kept in step with Run.status on every stop, failure and
 * crash; (2) "does this runner have room" is a COUNT of its active runs joined with the runner's capacity,
 * which a generic job queue does not know about; (3) a queued run's place is a COUNT over the same rows.
 *
 * Capacity is never exceeded, whatever number of web processes dispatch: a claim locks the candidate runner
 * rows (FOR UPDATE, in id order so two dispatchers cannot deadlock), counts their occupying runs (running,
 * lost, and queued ones already claimed for them) under that lock, and writes its claims before the
 * transaction commits; the next dispatcher's count, taken after it gets the lock, sees them.
 *
 * Other processes learn of new work by a short poll (DISPATCH_POLL_MS), not LISTEN/NOTIFY: the Prisma pg
 * adapter gives no dedicated connection to LISTEN on, a missed NOTIFY would strand a run anyway, and the
 * poll is one indexed query a second. In-process, startRun and finished runs kick it at once.
 */
import { type Diagnostic, type InitFrom, type RunKind } from "@contracts";
import { isAppError, rootMessage } from "@/server/errors";
import { runnerById, type RunnerHandle } from "@/server/runner-client";
import { parseStoredFiles } from "@/features/experiments/server";
import { fromDbKind } from "@/server/run-convert";
import { setDispatchKicker } from "./dispatch-kick";
import { notifyRunStarted } from "@/server/run-hooks";
import { claimRun, failRun, startRun, unclaimRun } from "./lifecycle";
import { recordRunnerFailure } from "@/features/runners/server";
import { workspaceRunSpec } from "@/features/workspace/server";
import type { Db, DbOrTx } from "@/server/db-types";

/** A queued run given to a runner, to be started there. */
export interface Claim {
  runId: string;
  runnerId: string;
}

interface QueuedRow {
  id: string;
  workspaceId: string;
  pinnedRunnerId: string | null;
  preferredRunnerId: string | null;
  baseModel: string;
  device: string | null;
}

interface RunnerSlot {
  id: string;
  workspaceId: string | null;
  capacity: number;
  models: string[];
  device: string | null;
  occupied: number;
}

/** Whether `runner` may take `run`: scope, pin (checkpoint lives there), model served, device, room. */
export function fits(run: QueuedRow, runner: RunnerSlot): boolean {
  if (runner.occupied >= runner.capacity) return false;
  if (runner.workspaceId !== null && runner.workspaceId !== run.workspaceId) return false;
  if (run.pinnedRunnerId && run.pinnedRunnerId !== runner.id) return false;
  if (runner.models.length > 0 && !runner.models.includes(run.baseModel)) return false;
  if (run.device && !(runner.device ?? "").startsWith(run.device)) return false;
  return true;
}

/** The batch of queued runs one claim looks at (FIFO within it). */
const CLAIM_BATCH = 50;

/** Claims queued runs for runners with room, in queue order; the claims are committed when it returns. */
export async function claimQueued(db: Db): Promise<Claim[]> {
  return db.$transaction(async (tx) => {
    const queued = await tx.$queryRaw<QueuedRow[]>`
      SELECT id, "workspaceId", "pinnedRunnerId", "preferredRunnerId", "baseModel", config->>'device' AS device
      FROM "Run" WHERE status = 'queued' AND "runnerId" IS NULL
      ORDER BY "createdAt", id LIMIT ${CLAIM_BATCH} FOR UPDATE SKIP LOCKED`;
    if (queued.length === 0) return [];
    // "unknown" = registered but not asked yet (tests, a fresh boot): tried, and marked if it fails.
    const runners = await tx.$queryRaw<Omit<RunnerSlot, "occupied">[]>`
      SELECT id, "workspaceId", capacity, models, device FROM "Runner"
      WHERE enabled AND health IN ('healthy', 'unknown') ORDER BY id FOR UPDATE`;
    if (runners.length === 0) return [];
    // An ART run is bound to the runner that trains its steps, but occupies it only while a step trains
    // (seconds to minutes, between the client's own rollouts): it takes no slot of the queue.
    const counts = await tx.$queryRaw<{ runnerId: string; n: number }[]>`
      SELECT "runnerId", count(*)::int AS n FROM "Run"
      WHERE "runnerId" = ANY(${runners.map((r) => r.id)}) AND status IN ('running', 'lost', 'queued') AND kind <> 'art'
      GROUP BY "runnerId"`;
    const slots: RunnerSlot[] = runners.map((r) => ({ ...r, occupied: counts.find((c) => c.runnerId === r.id)?.n ?? 0 }));
    const claims: Claim[] = [];
    for (const run of queued) {
      // The runner that checked the start when it has room (it is warm for these files, and the caller
      // named it); otherwise the one with the most room left, which spreads runs over the pool.
      const open = slots.filter((s) => fits(run, s));
      const best = open.find((s) => s.id === run.preferredRunnerId) ?? open.sort((a, b) => b.capacity - b.occupied - (a.capacity - a.occupied))[0];
      if (!best) continue;
      best.occupied += 1;
      claims.push({ runId: run.id, runnerId: best.id });
    }
    // The claim is the run's sign of life until it runs: the ingest scan asks the runner about a claimed run
    // only once it has been quiet that long since the claim, not since it was queued (it may have waited
    // for minutes, and the runner lists it only once its start returned).
    const now = new Date();
    for (const c of claims) await claimRun(tx, c.runId, c.runnerId, now);
    return claims;
  });
}

export interface DispatcherOptions {
  runnerFor?: (runnerId: string) => Promise<RunnerHandle>;
  /** How often to look for queued runs other processes enqueued (ms). */
  pollMs?: number;
  log?: (message: string) => void;
}

export class Dispatcher {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  private readonly log: (message: string) => void;

  constructor(
    private readonly db: Db,
    private readonly opts: DispatcherOptions = {},
  ) {
    this.runnerFor = opts.runnerFor ?? ((id) => runnerById(db, id));
    this.log = opts.log ?? ((m) => console.warn(`[dispatch] ${m}`));
  }

  /** Polls for work other processes queued (in-process work kicks it directly). */
  start(): void {
    this.timer = setInterval(() => this.kick(), this.opts.pollMs ?? 1_000);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Dispatch now (coalesced: a kick while a pass runs makes one more pass after it). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => (this.running = null));
  }

  /** Resolves when no pass is in flight (tests, bench). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const claims = await claimQueued(this.db);
        await Promise.all(claims.map((c) => this.startClaimed(c)));
        // Refused runs free their slot, unanswered ones come back to the queue: look again until idle.
        if (claims.length > 0) this.again = true;
      } catch (e) {
        this.log(`dispatch failed: ${rootMessage(e)}`);
      }
    } while (this.again && !this.stopped);
  }

  /** Starts a claimed run on its runner; returns true when the run went back to the queue. */
  async startClaimed(c: Claim): Promise<boolean> {
    const run = await this.db.run.findUnique({
      where: { id: c.runId },
      select: { status: true, runnerId: true, workspaceId: true, kind: true, attempt: true, evalModel: true, initFrom: true, version: { select: { files: true } } },
    });
    // Stopped while being claimed: nothing to start.
    if (!run || run.status !== "queued" || run.runnerId !== c.runnerId) return false;
    let runner: RunnerHandle | null = null;
    try {
      runner = await this.runnerFor(c.runnerId);
      const kind: RunKind = fromDbKind(run.kind);
      const files = parseStoredFiles(run.version.files);
      const res = await runner.start({
        run_id: c.runId,
        attempt: run.attempt,
        kind,
        files,
        // Its workspace, and the secrets and registered servers it names as they are now (a deleted one fails it here).
        ...(await workspaceRunSpec(this.db, run.workspaceId, files, kind)),
        eval_model: run.evalModel ?? undefined,
        init_from: (run.initFrom as InitFrom | null) ?? undefined,
      });
      if (!res.ok && res.runner_unavailable) {
        // The runner's condition, not the run's (its disk is full): the run waits for a runner that can take it.
        await recordRunnerFailure(this.db, c.runnerId, new Error(res.error));
        await unclaimRun(this.db, c.runId, c.runnerId);
        this.log(`run ${c.runId}: runner ${runner.name} cannot take runs (${res.error}); back in the queue`);
        return true;
      }
      if (!res.ok) {
        const errors = res.diagnostics.filter((d: Diagnostic) => (d.severity ?? "error") === "error");
        const first = errors[0];
        const why = first ? `refused by runner '${runner.name}': ${first.file}:${first.line}:${first.column}: ${first.message}` : `refused by runner '${runner.name}': ${res.error}`;
        await failRun(this.db, c.runId, why, { diagnostics: res.diagnostics });
        return false;
      }
    } catch (e) {
      if (isAppError(e) && e.code === "RUNNER_UNAVAILABLE") {
        // Unreachable (or its token unreadable): back to the queue, and the runner is out until it answers.
        const health = await recordRunnerFailure(this.db, c.runnerId, e);
        await unclaimRun(this.db, c.runId, c.runnerId);
        this.log(`run ${c.runId}: runner ${runner?.name ?? c.runnerId} ${health} (${e.message}); back in the queue`);
        return true;
      }
      await failRun(this.db, c.runId, isAppError(e) ? e.message : `runner failed to start the run: ${rootMessage(e)}`);
      return false;
    }
    if (!(await startRun(this.db, c.runId, c.runnerId))) {
      // Stopped while the runner was starting it: stop it there too rather than let it run unseen.
      await runner.stop(c.runId, run.attempt).catch(() => undefined);
      return false;
    }
    notifyRunStarted(c.runId);
    return false;
  }
}

const DISPATCHERS = Symbol.for("rollbook.dispatchers");

/**
 * The process's dispatcher for `db` (on globalThis: Next's route bundle and the custom server are two module
 * graphs in one process). Created on first use, so a test or script that starts runs gets them dispatched.
 */
export function dispatcherFor(db: Db, opts?: DispatcherOptions): Dispatcher {
  const g = globalThis as { [DISPATCHERS]?: WeakMap<Db, Dispatcher> };
  g[DISPATCHERS] ??= new WeakMap();
  let d = g[DISPATCHERS].get(db);
  if (!d) {
    d = new Dispatcher(db, opts);
    g[DISPATCHERS].set(db, d);
  }
  return d;
}

// What frees a slot (the run lifecycle) kicks the dispatcher through dispatch-kick.ts, without importing it.
setDispatchKicker((db) => dispatcherFor(db).kick());

export { kickDispatch } from "./dispatch-kick";

/** A queued run's place: 1 + the waiting runs ahead of it (null when it is not waiting). */
export async function queuePosition(db: DbOrTx, runId: string): Promise<number | null> {
  return (await queuePositions(db, [runId])).get(runId) ?? null;
}

/** The places of those of `runIds` still waiting for a runner (one query for a page of the runs table). */
export async function queuePositions(db: DbOrTx, runIds: string[]): Promise<Map<string, number>> {
  if (runIds.length === 0) return new Map();
  const rows = await db.$queryRaw<{ id: string; pos: number }[]>`
    SELECT w.id, w.pos FROM (
      SELECT q.id, (row_number() OVER (ORDER BY q."createdAt", q.id))::int AS pos
      FROM "Run" q WHERE q.status = 'queued' AND q."runnerId" IS NULL
    ) w WHERE w.id = ANY(${runIds}::text[])`;
  return new Map(rows.map((r) => [r.id, r.pos]));
}
