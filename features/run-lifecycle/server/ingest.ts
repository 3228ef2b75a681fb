/**
 * Ingestion: the web server consumes each running run's event stream from its runner and writes it to
 * Postgres, then fans it out to browsers (socket.io room `run:<id>`).
 *
 * Idempotent by construction: every batch is ONE transaction that locks the Run row, stores the events
 * with skipDuplicates on (runId, seq), and applies projections (trajectories, steps, checkpoints, counters,
 * status) only for events with seq > the run's stored lastSeq, then advances lastSeq. Re-delivery after a
 * reconnect, a web restart or a runner replay therefore changes nothing. Subscriptions resume after the
 * stored lastSeq, so nothing is skipped either.
 */
import { ACTIVE_RUN_STATUSES, RunEvent, countedReward, isActiveStatus, isTerminalStatus, type RunnerStatus, type RunStatus, type StepMetrics, type Trajectory } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import { type RunnerHandle, type RunnerSubscription } from "@/server/runner-client";
import { insertEvents, insertTrajectoriesFromEvents, upsertSteps } from "./ingest-sql";
import { IngestLeases, newHolderId } from "./ingest-lease";
import { fromDbKind, rowToEvent } from "@/server/run-convert";
import { schedulePostIngest } from "@/features/flags/server";
import type { DatabaseProbe } from "@/server/realtime/delivery-health";
import { emitRunEvents, setIngestHook } from "@/server/run-hooks";
import { announce, applyRunnerEvents, closeAttempt, failRun, loseRun, recordSignOfLife, recoverRun } from "./lifecycle";
import { summaryPatch, type RunSummary } from "./run-summary";
import type { Db } from "@/server/db-types";

export type IngestResult = {
  /** Events with seq > the stored lastSeq before this batch, in seq order: what subscribers have not seen. */
  fresh: RunEvent[];
  lastSeq: number;
  status: RunStatus;
  error: string | null;
  /** The run's attempt, and whether its runner may still append to it (false once its run.finished is stored). */
  attempt: number;
  attemptOpen: boolean;
  statusChanged: boolean;
  /** The batch came from a runner the run has since moved away from: nothing was stored. */
  superseded?: boolean;
};


/**
 * Postgres text and jsonb reject NUL characters and unpaired surrogates, which sampled text or a
 * scenario's logs can contain; one such string would fail its batch on every retry and stall the run's
 * ingestion. Both become U+FFFD, in the stored copy and in what subscribers receive.
 */
export function storableStrings<T>(value: T): T {
  if (typeof value === "string") {
    return (UNSTORABLE.test(value) ? value.replace(UNSTORABLE_ALL, "\uFFFD") : value) as T;
  }
  if (Array.isArray(value)) {
    // Copied only where something changed: almost nothing needs it, and ingestion walks every event.
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = storableStrings(value[i] as unknown);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return (out ?? value) as T;
  }
  if (value && typeof value === "object") {
    let out: Record<string, unknown> | null = null;
    for (const [k, v] of Object.entries(value)) {
      const key = storableStrings(k);
      const val = storableStrings(v as unknown);
      if (key !== k || val !== v) {
        if (!out) out = { ...(value as Record<string, unknown>) };
        if (key !== k) delete out[k];
        out[key] = val;
      }
    }
    return (out ?? value) as T;
  }
  return value;
}

// NUL, and a high surrogate not followed by a low one, or a low one not preceded by a high one.
const UNSTORABLE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, "g");

/**
 * Stores one batch of a run's events in one transaction (see the file comment). Events must belong to
 * `runId`; their order in the array does not matter. `fromRunnerId`: the runner the batch was read from;
 * when the run has since been resumed on another runner the batch is dropped whole (superseded), so a
 * runner that comes back still running a moved run never writes into its record.
 */
export async function ingestEvents(db: Db, runId: string, events: RunEvent[], fromRunnerId?: string): Promise<IngestResult> {
  const sorted = events.map(storableStrings).sort((a, b) => a.seq - b.seq);
  for (const e of sorted) {
    if (e.run_id !== runId) throw new AppError("BAD_INPUT", `event seq ${e.seq} belongs to run ${e.run_id}, not ${runId}`);
  }
  return db.$transaction(
    async (tx) => {
      // The row lock serialises concurrent batches of one run, so "seq > lastSeq" is decided once.
      const locked = await tx.$queryRaw<
        {
          lastSeq: number;
          status: RunStatus;
          error: string | null;
          kind: "train" | "dry_run" | "eval";
          currentStep: number;
          startedAt: Date | null;
          runnerId: string | null;
          attempt: number;
          attemptOpen: boolean;
        }[]
      >`SELECT "lastSeq", "status"::text AS "status", "error", "kind"::text AS "kind", "currentStep", "startedAt", "runnerId", "attempt", "attemptOpen"
        FROM "Run" WHERE "id" = ${runId} FOR UPDATE`;
      const run = locked[0];
      if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
      const unchanged = { lastSeq: run.lastSeq, status: run.status, error: run.error, attempt: run.attempt, attemptOpen: run.attemptOpen, statusChanged: false };
      if (fromRunnerId !== undefined && run.runnerId !== fromRunnerId) return { fresh: [], ...unchanged, superseded: true };

      if (sorted.length > 0) await insertEvents(tx, runId, sorted);
      const seen = new Set<number>();
      const fresh = sorted.filter((e) => e.seq > run.lastSeq && !seen.has(e.seq) && seen.add(e.seq));
      if (fresh.length === 0) return { fresh, ...unchanged };

      // A rollout re-emitted under the same trajectory id (a step redone after a resume) replaces the
      // earlier attempt's: the latest by seq wins, here and in the run page's reducer (run-state.ts).
      const trajectories = new Map<string, { seq: number; t: Trajectory }>();
      const steps = new Map<number, StepMetrics>();
      let currentStep: number | undefined;
      const kind = fromDbKind(run.kind);
      // The runs table's summary metrics (last step's, last eval's), merged into Run.summary below.
      const summary: RunSummary = {};
      const bumpStep = (s: number) => {
        currentStep = currentStep === undefined ? s : Math.max(currentStep, s);
      };

      for (const e of fresh) {
        Object.assign(summary, summaryPatch(e));
        switch (e.type) {
          case "rollout.finished": {
            const t = e.payload;
            trajectories.set(t.id, { seq: e.seq, t });
            if (t.split === "train") bumpStep(t.step);
            break;
          }
          case "step.finished":
            steps.set(e.payload.step, e.payload); // the newest event for a step wins, as an upsert per event would
            bumpStep(e.payload.step);
            break;
          case "checkpoint.saved":
            await tx.checkpoint.upsert({
              where: { runId_step: { runId, step: e.payload.step } },
              create: { runId, step: e.payload.step, path: e.payload.path, sizeBytes: BigInt(e.payload.size_bytes) },
              update: { path: e.payload.path, sizeBytes: BigInt(e.payload.size_bytes) },
            });
            break;
          case "run.started":
          case "run.finished":
            break; // their effect on the status is the lifecycle's (below)
          case "run.log":
          case "train.progress":
          case "eval.finished":
            break; // kept in the event log only (runs.get reads eval.finished from there)
        }
      }

      const counters = await storeTrajectories(tx, runId, kind, [...trajectories.values()]);
      if (steps.size > 0) await upsertSteps(tx, runId, [...steps.values()]);
      if (Object.keys(summary).length > 0) {
        // jsonb || merges in SQL: keys this batch did not touch (an earlier eval's eval_reward) stay.
        await tx.$executeRaw`UPDATE "Run" SET "summary" = "summary" || ${JSON.stringify(summary)}::jsonb WHERE "id" = ${runId}`;
      }
      const last = fresh[fresh.length - 1]!;
      // What the events do to the run's status and attempt: the lifecycle's to decide and write.
      const next = await applyRunnerEvents(tx, runId, run, fresh);
      await tx.run.update({
        where: { id: runId },
        data: {
          lastSeq: last.seq,
          lastHeartbeatAt: new Date(),
          rolloutCount: { increment: counters.rollouts },
          errorCount: { increment: counters.errors },
          rewardSum: { increment: counters.rewardSum },
          rewardCount: { increment: counters.rewardCount },
          ...(currentStep !== undefined && currentStep > run.currentStep ? { currentStep } : {}),
        },
      });
      return {
        fresh,
        lastSeq: last.seq,
        status: next.status,
        error: next.error,
        attempt: next.attempt,
        attemptOpen: next.attemptOpen,
        statusChanged: next.status !== run.status || next.attempt !== run.attempt,
      };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
}

type Counters = { rollouts: number; errors: number; rewardSum: number; rewardCount: number };

/** What one stored trajectory adds to the run's counters (the mean reward as contracts/mean-reward.ts defines it). */
function contribution(kind: ReturnType<typeof fromDbKind>, t: { split: string; reward: number | null; error: unknown }): Counters {
  const reward = countedReward(kind, { split: t.split === "val" ? "val" : "train", reward: t.reward });
  return { rollouts: 1, errors: t.error != null ? 1 : 0, rewardSum: reward ?? 0, rewardCount: reward === null ? 0 : 1 };
}

/**
 * Stores a batch's trajectories (one per id, the latest attempt) and returns how the run's counters change:
 * a new id adds its contribution; an id stored by an earlier attempt (lower seq) is replaced, its old
 * contribution taken off, so a redone step is never counted twice and the counters always equal what the
 * stored trajectories add up to. Redelivery (the same or an older seq) changes nothing.
 */
async function storeTrajectories(
  tx: Prisma.TransactionClient,
  runId: string,
  kind: ReturnType<typeof fromDbKind>,
  rows: { seq: number; t: Trajectory }[],
): Promise<Counters> {
  const delta: Counters = { rollouts: 0, errors: 0, rewardSum: 0, rewardCount: 0 };
  if (rows.length === 0) return delta;
  const add = (c: Counters, sign: 1 | -1) => {
    delta.rollouts += sign * c.rollouts;
    delta.errors += sign * c.errors;
    delta.rewardSum += sign * c.rewardSum;
    delta.rewardCount += sign * c.rewardCount;
  };
  const existing = await tx.trajectory.findMany({
    where: { runId, id: { in: rows.map((r) => r.t.id) } },
    select: { id: true, seq: true, split: true, reward: true, error: true },
  });
  const before = new Map(existing.map((t) => [t.id, t]));
  const fresh = rows.filter((r) => {
    const old = before.get(r.t.id);
    return !old || old.seq < r.seq;
  });
  const replaced = fresh.flatMap((r) => (before.has(r.t.id) ? [before.get(r.t.id)!] : []));
  for (const old of replaced) add(contribution(kind, old), -1);
  if (replaced.length > 0) await tx.trajectory.deleteMany({ where: { runId, id: { in: replaced.map((t) => t.id) } } });
  for (const { t } of fresh) add(contribution(kind, { split: t.split, reward: t.reward, error: t.error }), 1);
  // Projected in SQL from the events just stored (ingest-sql.ts): each rollout's JSON is parsed once.
  if (fresh.length > 0) await insertTrajectoriesFromEvents(tx, runId, fresh.map((r) => r.seq));
  return delta;
}

/** Ingest a batch and tell socket subscribers about what was new. */
export async function ingestAndEmit(db: Db, runId: string, events: RunEvent[], fromRunnerId?: string): Promise<IngestResult> {
  const res = await ingestEvents(db, runId, events, fromRunnerId);
  if (res.fresh.length > 0) emitRunEvents(runId, res.fresh);
  if (res.statusChanged) announce(db, { runId, status: res.status, error: res.error, lastSeq: res.lastSeq, attempt: res.attempt });
  if (res.fresh.length > 0) schedulePostIngest(db, runId, res); // pathology flags, run-ended alerts (not awaited)
  return res;
}

/** A run ingestion looks after: an active one, or an ended one whose runner may still be logging its attempt. */
type ActiveRunRow = {
  id: string;
  status: RunStatus;
  lastSeq: number;
  runnerId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  lastHeartbeatAt: Date | null;
  lostSince: Date | null;
  attempt: number;
  attemptOpen: boolean;
};

/** Active runs, and ended runs whose attempt is still open on their runner (ingestion follows both). */
const FOLLOWED_RUNS = { OR: [{ status: { in: [...ACTIVE_RUN_STATUSES] } }, { attemptOpen: true }] };

/** How long after a Stop recorded while the runner was unreachable the scan still tells the runner to stop it. */
const STOP_LATER_WINDOW_MS = 24 * 3600_000;

/** Longer than runs.start's validate + start timeouts (60 s each) together. */
const QUEUED_LOST_AFTER_MS = 180_000;
const QUEUED_FOLLOW_AFTER_MS = 10_000;

export type IngestOptions = {
  /** The most events one transaction stores (a run whose buffer holds more stores it in several). */
  maxBatch?: number;
  /** How often to look for running runs nobody follows and for runs their runner lost. */
  scanMs?: number;
  /**
   * RUNNER_LOST_AFTER_MS: a run that sent nothing for this long is checked with its runner: a runner that
   * does not answer makes it `lost` (visible, not terminal), one that answers without it fails it
   * ("runner lost the run"), one that still has it keeps it running.
   */
  lostAfterMs?: number;
  maxBackoffMs?: number;
  /**
   * INGEST_LEASE_MS: how long this process's lease on a run lasts without renewal (renewed every third of
   * it). A killed process's runs are taken over by another one within about this long (ingest-lease.ts).
   */
  leaseMs?: number;
  /** This process's lease holder id (default: host, pid and a random part). */
  holder?: string;
  runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  log?: (msg: string) => void;
  /** Called after each batch this process stored (tests count who ingested what). */
  onStored?: (runId: string, batch: RunEvent[], res: IngestResult) => void;
  /**
   * Told of every database round trip ingestion makes (lease ticks, stored batches): what the pages' "live"
   * indicator says (server/realtime/delivery-health.ts).
   */
  database?: DatabaseProbe;
};

type FollowerOptions = Required<Omit<IngestOptions, "log" | "onStored" | "holder" | "database">> &
  Pick<IngestOptions, "onStored" | "database"> & { log: (msg: string) => void };

/**
 * Follows one run's event stream and stores it by group commit: an event that arrives while no store is
 * in flight is stored at once (with whatever arrived in the same tick); events that arrive while a store
 * is in flight wait for it and then go together in the next one. An idle run therefore reaches the
 * database (and, once committed, the browsers) in one transaction's time, and a busy one in batches that
 * grow with the load — no timer holds anything back. Reconnects with backoff.
 */
class RunFollower {
  private buffer: RunEvent[] = [];
  private scheduled = false;
  private storing = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private sub: RunnerSubscription | undefined;
  private chain: Promise<void> = Promise.resolve();
  private backoffMs = 1_000;
  private generation = 0;
  /** The runner the current stream reads from (batches are stored only while the run is still on it). */
  private runnerId: string | undefined;
  closed = false;
  finished = false;
  /** When the last event arrived (0 = none yet: connecting is not a sign of life). */
  lastActivity = 0;

  constructor(
    readonly runId: string,
    private readonly db: Db,
    private readonly opts: FollowerOptions,
    private readonly onDone: (f: RunFollower) => void,
    /** The highest seq sent to the run's room so far (by this process or, before it took the lease, others). */
    public emittedSeq: number,
  ) {}

  async connect(): Promise<void> {
    if (this.closed) return;
    const gen = ++this.generation;
    try {
      const run = await this.db.run.findUnique({ where: { id: this.runId }, select: { lastSeq: true, status: true, runnerId: true, attemptOpen: true } });
      // Followed until the runner's log and the database agree the attempt ended: a final status alone (stopped
      // while the runner was unreachable) is not that, the runner may still be logging it.
      if (!run || !run.runnerId || (isTerminalStatus(run.status) && !run.attemptOpen)) return this.close();
      const runner = await this.opts.runnerFor(run.runnerId);
      if (this.closed || gen !== this.generation) return;
      this.runnerId = run.runnerId;
      this.sub = runner.events(this.runId, run.lastSeq, {
        onEvent: (raw) => gen === this.generation && this.receive(raw),
        onError: (err) => gen === this.generation && this.dropped(`stream error: ${err.message}`),
        onComplete: () => gen === this.generation && this.dropped("stream ended"),
      });
    } catch (e) {
      this.dropped(`connect failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private receive(raw: unknown): void {
    const parsed = RunEvent.safeParse(raw);
    if (!parsed.success) {
      this.opts.log(`run ${this.runId}: dropped an invalid event: ${parsed.error.issues[0]?.message ?? "?"}`);
      return;
    }
    if (parsed.data.run_id !== this.runId) return;
    this.lastActivity = Date.now();
    this.backoffMs = 1_000;
    this.buffer.push(parsed.data);
    // One event stream chunk often carries several events: let the rest of this tick arrive first.
    if (!this.scheduled && !this.storing) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    }
  }

  /** Start storing the buffer unless a store is in flight (its end calls pump again). One at a time per run. */
  private pump(): void {
    if (this.storing || this.buffer.length === 0) return;
    const batch = this.buffer.splice(0, this.opts.maxBatch);
    this.storing = true;
    this.chain = (async () => {
      try {
        const res = await ingestAndEmit(this.db, this.runId, batch, this.runnerId);
        if (res.superseded) {
          this.buffer = [];
          this.dropped("the run was resumed on another runner");
        } else {
          // Everything up to the stored lastSeq has now reached the room (this batch's fresh events just now).
          this.emittedSeq = Math.max(this.emittedSeq, res.lastSeq);
          this.opts.database?.ok();
          this.opts.onStored?.(this.runId, batch, res);
        }
        if (!res.superseded && isTerminalStatus(res.status) && !res.attemptOpen) {
          this.finished = true;
          this.close();
        }
      } catch (e) {
        // The events are still on the runner. What is buffered behind the failed batch must not be stored
        // before it (its projections would skip the failed events for good): drop both, and resume the
        // stream after the stored lastSeq.
        this.buffer = [];
        this.opts.log(`run ${this.runId}: storing ${batch.length} events failed: ${e instanceof Error ? e.message : String(e)}`);
        this.dropped("store failed");
      } finally {
        this.storing = false;
        this.pump();
      }
    })();
  }

  /** Resolves once everything buffered so far is stored (or its store failed). */
  async flush(): Promise<void> {
    for (;;) {
      this.pump();
      if (!this.storing) return;
      await this.chain;
    }
  }

  private dropped(reason: string): void {
    if (this.closed) return;
    this.generation++; // ignore anything the old stream still delivers
    this.sub?.unsubscribe();
    this.sub = undefined;
    void this.flush().then(() => {
      if (this.closed) return;
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs);
      this.opts.log(`run ${this.runId}: ${reason}; reconnecting in ${delay / 1000} s`);
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = undefined;
        void this.connect();
      }, delay);
    });
  }

  /** The runner the current stream reads from (undefined before the first connect). */
  get streamRunnerId(): string | undefined {
    return this.runnerId;
  }

  /** The run moved to another runner (a resume): leave the old stream now and follow the run's runner. */
  restart(): void {
    if (this.closed) return;
    this.generation++;
    this.sub?.unsubscribe();
    this.sub = undefined;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.backoffMs = 1_000;
    void this.flush().then(() => this.connect());
  }

  /** The runner answers again: reconnect now instead of waiting out the backoff. */
  kick(): void {
    if (this.closed || this.sub || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.backoffMs = 1_000;
    void this.connect();
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.onDone(this);
  }

  /** Stop following, storing what is buffered first. */
  async shutdown(): Promise<void> {
    await this.flush();
    this.close();
  }
}

/** Re-sent to a room per read when a lease is taken over (see resend). */
const RESEND_PAGE = 1_000;

/**
 * Every active run is followed by exactly one web process: the holder of its ingest lease
 * (ingest-lease.ts). Each process renews its leases every leaseMs / 3 and, on the same tick, takes the
 * leases of active runs nobody holds (new ones, a dead process's once expired) — so with one process it
 * follows everything, with several they share the runs, and a killed one's runs move within about leaseMs.
 * The runner checks (lost / back / gone) are made by the holder only.
 */
export class IngestService {
  private followers = new Map<string, RunFollower>();
  /** Runs whose lease is being taken right now (not followed yet). */
  private acquiring = new Set<string>();
  private scanTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private scanning = false;
  private leaseTicking = false;
  private lastRenewOk = Date.now();
  private readonly opts: FollowerOptions;
  private stopped = false;
  readonly leases: IngestLeases;

  constructor(
    private readonly db: Db,
    opts: IngestOptions,
  ) {
    const { holder, ...rest } = opts;
    this.opts = {
      maxBatch: 2_000,
      scanMs: 5_000,
      lostAfterMs: 15_000,
      maxBackoffMs: 30_000,
      leaseMs: 6_000,
      log: (m) => console.warn(`[ingest] ${m}`),
      ...rest,
    };
    this.leases = new IngestLeases(db, holder ?? newHolderId(), this.opts.leaseMs);
  }

  /** Resume every run the database says is running (whose lease is free), and keep scanning. */
  async start(): Promise<void> {
    setIngestHook(this);
    await this.scan();
    this.scanTimer = setInterval(() => void this.scan(), this.opts.scanMs);
    this.scanTimer.unref();
    this.leaseTimer = setInterval(() => void this.leaseTick(), Math.max(100, Math.floor(this.opts.leaseMs / 3)));
    this.leaseTimer.unref();
  }

  /** Follow a run if this process can take its lease (a run another process holds is left to it). */
  follow(runId: string): void {
    void this.acquire([runId]);
  }

  /**
   * Follow the run on the runner the database now names (after a resume moved it), dropping any old stream.
   * Where another process holds the run's lease, that process notices the move at its next lease tick.
   */
  refollow(runId: string): void {
    const f = this.followers.get(runId);
    if (f) f.restart();
    else this.follow(runId);
  }

  isFollowing(runId: string): boolean {
    return this.followers.has(runId);
  }

  /** Takes the free leases among these runs and follows those runs. */
  private async acquire(runIds: string[]): Promise<void> {
    const wanted = runIds.filter((id) => !this.followers.has(id) && !this.acquiring.has(id));
    if (this.stopped || wanted.length === 0) return;
    for (const id of wanted) this.acquiring.add(id);
    try {
      for (const lease of await this.leases.take(wanted)) {
        if (this.stopped) break;
        const emitted = await this.resend(lease.runId, lease.emittedSeq);
        if (this.stopped || this.followers.has(lease.runId)) continue;
        const f = new RunFollower(lease.runId, this.db, this.opts, (done) => this.followerDone(done), emitted);
        this.followers.set(lease.runId, f);
        void f.connect();
      }
    } catch (e) {
      this.opts.log(`taking ingest leases failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      for (const id of wanted) this.acquiring.delete(id);
    }
  }

  /**
   * A lease taken over: the previous holder may have stored events it never sent to the run's room (killed
   * between the two). Send the stored events after what it recorded as emitted, so open pages have no gap
   * (they drop duplicates by seq). Returns the seq emitted up to.
   */
  private async resend(runId: string, emittedSeq: number): Promise<number> {
    let after = emittedSeq;
    for (;;) {
      const rows = await this.db.runEvent.findMany({ where: { runId, seq: { gt: after } }, orderBy: { seq: "asc" }, take: RESEND_PAGE });
      if (rows.length === 0) return after;
      emitRunEvents(runId, rows.map(rowToEvent));
      after = rows.at(-1)!.seq;
      if (rows.length < RESEND_PAGE) return after;
    }
  }

  private followerDone(done: RunFollower): void {
    if (this.followers.get(done.runId) !== done) return;
    this.followers.delete(done.runId);
    // Let another process have it at once (a no-op if someone else holds it already); stop() releases in bulk.
    if (!this.stopped) {
      this.leases.release(new Map([[done.runId, done.emittedSeq]])).catch((e: unknown) => {
        this.opts.log(`run ${done.runId}: releasing the ingest lease failed: ${e instanceof Error ? e.message : String(e)}`);
      });
    }
  }

  /** Active runs worth following: queued ones only once their start call has had time to finish. */
  private followable(active: Pick<ActiveRunRow, "id" | "status" | "runnerId" | "createdAt">[]): string[] {
    const now = Date.now();
    return active.filter((r) => r.status !== "queued" || (r.runnerId && now - r.createdAt.getTime() > QUEUED_FOLLOW_AFTER_MS)).map((r) => r.id);
  }

  /**
   * Every leaseMs / 3: renew this process's leases (a run whose lease was taken over is no longer followed
   * here), then take the leases of active runs nobody holds.
   */
  private async leaseTick(): Promise<void> {
    if (this.leaseTicking || this.stopped) return;
    this.leaseTicking = true;
    try {
      if (this.followers.size > 0) {
        try {
          const held = await this.leases.renew(new Map([...this.followers].map(([id, f]) => [id, f.emittedSeq])));
          this.lastRenewOk = Date.now();
          for (const [id, f] of this.followers) {
            if (held.has(id)) continue;
            this.opts.log(`run ${id}: ingest lease held by another process now; no longer following it here`);
            f.close();
          }
        } catch (e) {
          this.opts.database?.failed();
          this.opts.log(`renewing ingest leases failed: ${e instanceof Error ? e.message : String(e)}`);
          // Unrenewed for a whole TTL: another process may hold them now. Stop; the next tick takes them back if free.
          if (Date.now() - this.lastRenewOk > this.opts.leaseMs) {
            this.opts.log(`ingest leases not renewed for ${this.opts.leaseMs} ms; no longer following ${this.followers.size} run(s)`);
            for (const f of [...this.followers.values()]) f.close();
          }
          return;
        }
      } else {
        this.lastRenewOk = Date.now();
      }
      const active = await this.db.run.findMany({ where: FOLLOWED_RUNS, select: { id: true, status: true, runnerId: true, createdAt: true } });
      // A run resumed on another runner through another web process: follow it there now.
      for (const r of active) {
        const f = this.followers.get(r.id);
        if (f?.streamRunnerId && r.runnerId && r.runnerId !== f.streamRunnerId) f.restart();
      }
      this.opts.database?.ok();
      await this.acquire(this.followable(active));
    } catch (e) {
      this.opts.database?.failed();
      this.opts.log(`ingest lease tick failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.leaseTicking = false;
    }
  }

  /**
   * Follow active runs nobody follows; check the quiet ones with their runner (lost, back, or gone); tell a
   * runner that is reachable again to stop runs that were stopped while it was not.
   */
  async scan(): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    try {
      const active = await this.db.run.findMany({
        where: FOLLOWED_RUNS,
        select: { id: true, status: true, lastSeq: true, runnerId: true, createdAt: true, startedAt: true, finishedAt: true, lastHeartbeatAt: true, lostSince: true, attempt: true, attemptOpen: true },
      });
      // Queued runs too, once their start call has had time to finish: a start the runner accepted whose
      // "running" update was lost still gets its events (run.started makes it running).
      await this.acquire(this.followable(active));
      // The runner checks belong to each run's lease holder: N processes must not each ask the runner and
      // mark the run. A run with no runner has no follower (and no holder): failing it is one conditional
      // update, the same whoever makes it.
      await this.checkRunners(active.filter((r) => !r.runnerId || this.followers.has(r.id)));
      await this.leases.prune();
    } catch (e) {
      this.opts.log(`scan failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.scanning = false;
    }
  }

  private async checkRunners(followed: ActiveRunRow[]): Promise<void> {
    const now = Date.now();
    const active = followed.filter((r) => isActiveStatus(r.status));
    // Ended here (stopped while the runner was unreachable, …) while the runner may still run the attempt.
    const openEnded = followed.filter((r) => !isActiveStatus(r.status) && r.attemptOpen && r.runnerId);
    const quiet = active.filter((r) => {
      if (r.status === "lost") return true; // asked every scan until the runner answers
      const last = this.lastSignOfLife(r);
      // A queued run may still be inside runs.start (validate + start can take minutes on a busy runner).
      const threshold = r.status === "queued" ? Math.max(this.opts.lostAfterMs, QUEUED_LOST_AFTER_MS) : this.opts.lostAfterMs;
      return now - last > threshold;
    });
    const byRunner = new Map<string, ActiveRunRow[]>();
    for (const r of quiet) {
      // A queued run without a runner is waiting in the queue (features/run-lifecycle/server/dispatcher.ts): not lost.
      if (r.status === "queued" && !r.runnerId) continue;
      if (!r.runnerId) {
        await failRun(this.db, r.id, "no runner was assigned to the run");
        continue;
      }
      byRunner.set(r.runnerId, [...(byRunner.get(r.runnerId) ?? []), r]);
    }
    const ask: ActiveRunRow[] = [];
    for (const r of openEnded) {
      // A runner gone for a day is not coming back with that attempt: stop waiting for its end.
      if (r.finishedAt && now - r.finishedAt.getTime() > STOP_LATER_WINDOW_MS) await closeAttempt(this.db, r.id, r.attempt);
      else ask.push(r);
    }
    for (const r of ask) if (!byRunner.has(r.runnerId!)) byRunner.set(r.runnerId!, []);
    // Runners a resume moved runs away from: one that comes back may still be running them.
    const movedAway = await this.db.run.findMany({ where: { movedFromRunnerId: { not: null } }, select: { id: true, movedFromRunnerId: true } });
    for (const r of movedAway) if (!byRunner.has(r.movedFromRunnerId!)) byRunner.set(r.movedFromRunnerId!, []);

    for (const [runnerId, runs] of byRunner) {
      let runner: RunnerHandle;
      let reported: RunnerStatus["runs"];
      try {
        runner = await this.opts.runnerFor(runnerId);
        reported = (await runner.status()).runs;
      } catch (e) {
        // No answer: its quiet runs are lost (not failed: they may be fine and resume when it is back).
        const why = e instanceof Error ? e.message : String(e);
        for (const r of runs) await this.markLost(r, why);
        continue;
      }
      const known = new Map(reported.map((r) => [r.run_id, r]));
      for (const r of runs) {
        const reported = known.get(r.id);
        if (reported && (await this.recordUnloggedFailure(r, reported))) continue;
        if (reported) {
          await this.markAnswering(r, reported);
          continue;
        }
        if (await failRun(this.db, r.id, "runner lost the run (it no longer knows it, and no events arrived)")) {
          this.opts.log(`run ${r.id}: runner lost the run`);
        }
        this.followers.get(r.id)?.close();
      }
      for (const r of ask) {
        if (r.runnerId !== runnerId) continue;
        const there = known.get(r.id);
        // Nothing more can come from a runner that does not have the run: the attempt is over.
        if (!there) {
          await closeAttempt(this.db, r.id, r.attempt);
          this.followers.get(r.id)?.close();
          continue;
        }
        // Ended here, still running there: stop that attempt now (a newer one, resumed since, is left alone).
        // Its events until it stops are still stored: the attempt stays open until its run.finished.
        if (there.status === "running" && (there.attempt ?? 1) === r.attempt) {
          this.opts.log(`run ${r.id}: ${r.status} here while its runner was unreachable; telling the runner to stop attempt ${r.attempt}`);
          await runner.stop(r.id, r.attempt).catch((e: unknown) => this.opts.log(`run ${r.id}: stop failed: ${e instanceof Error ? e.message : String(e)}`));
        }
        this.followers.get(r.id)?.kick();
      }
      await this.stopMovedAway(runner, known, movedAway);
    }
  }

  /**
   * The runner answers: runs moved off it that it still runs are stopped there (their events are not
   * ingested anyway: ingestion reads only from the run's current runner), then it is forgotten as theirs.
   */
  private async stopMovedAway(runner: RunnerHandle, known: Map<string, RunnerStatus["runs"][number]>, movedAway: { id: string; movedFromRunnerId: string | null }[]): Promise<void> {
    for (const r of movedAway) {
      if (r.movedFromRunnerId !== runner.id) continue;
      if (known.get(r.id)?.status === "running") {
        this.opts.log(`run ${r.id}: was resumed on another runner; telling runner '${runner.name}' to stop its old copy`);
        try {
          await runner.stop(r.id);
        } catch (e) {
          this.opts.log(`run ${r.id}: stop failed: ${e instanceof Error ? e.message : String(e)}`);
          continue; // asked again next scan
        }
      }
      await this.db.run.updateMany({ where: { id: r.id, movedFromRunnerId: runner.id }, data: { movedFromRunnerId: null } });
    }
  }

  private lastSignOfLife(r: ActiveRunRow): number {
    const follower = this.followers.get(r.id);
    return Math.max(r.lastHeartbeatAt?.getTime() ?? 0, r.startedAt?.getTime() ?? 0, r.createdAt.getTime(), follower?.lastActivity ?? 0);
  }

  /** The runner did not answer: the run is `lost` since its last sign of life (kept if already lost). */
  private async markLost(r: ActiveRunRow, why: string): Promise<void> {
    if (r.status !== "running") return; // lost already; a queued run that never started is failed by start
    if (await loseRun(this.db, r.id, new Date(this.lastSignOfLife(r)))) this.opts.log(`run ${r.id}: runner not answering (${why}); marked lost`);
  }

  /**
   * The runner says the run failed, and its log holds nothing this database lacks: the verdict will not
   * arrive as an event (its run.finished could not be written: "disk full on runner …"), so it is recorded
   * from here. The follower stays: the run.finished the runner writes once its disk takes writes again is
   * still stored (the first verdict kept).
   */
  private async recordUnloggedFailure(r: ActiveRunRow, reported: RunnerStatus["runs"][number]): Promise<boolean> {
    if (reported.status !== "failed" || reported.last_seq > r.lastSeq) return false;
    const error = reported.error ?? `the runner reports the run failed without a reason; its event log ends at seq ${reported.last_seq}`;
    // The runner still has the run and writes its run.finished once its disk takes writes: the attempt stays open.
    if (await failRun(this.db, r.id, error, { runnerMayRun: true })) this.opts.log(`run ${r.id}: failed on its runner: ${error}`);
    return true;
  }

  /**
   * The runner answered and still has the run: it is alive (running again if it was lost and the runner
   * runs it). A lost run the runner reports ended is not running again — a runner restarted mid-run
   * reports it failed ("the runner restarted while this run was in progress") — so it stays lost until
   * the follower stores that run.finished: the page never shows it running in between (bench/chaos.ts,
   * runner SIGKILL: lost → running → failed before this).
   */
  private async markAnswering(r: ActiveRunRow, reported: RunnerStatus["runs"][number]): Promise<void> {
    if (r.status !== "lost") await recordSignOfLife(this.db, r.id, r.status);
    else if (reported.status === "running" && (await recoverRun(this.db, r.id))) this.opts.log(`run ${r.id}: runner answers again; running`);
    this.followers.get(r.id)?.kick();
  }

  /** Stop scanning and following; buffered events are stored first, then the leases are released. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    setIngestHook(undefined);
    const followers = [...this.followers.values()];
    await Promise.all(followers.map((f) => f.shutdown()));
    this.followers.clear();
    await this.leases.release(new Map(followers.map((f) => [f.runId, f.emittedSeq]))).catch((e: unknown) => {
      this.opts.log(`releasing ingest leases failed (they expire in ${this.opts.leaseMs} ms): ${e instanceof Error ? e.message : String(e)}`);
    });
  }
}
