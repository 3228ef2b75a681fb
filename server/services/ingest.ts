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
import { RunEvent, type RunStatus } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { AppError } from "../errors";
import { type RunnerHandle, type RunnerSubscription } from "../runner-client";
import { eventToRow, trajectoryToRow } from "./run-convert";
import { schedulePostIngest } from "./pathology/after-ingest";
import { emitRunEvents, emitRunStatus, setIngestHook } from "./run-hooks";
import { summaryPatch, type RunSummary } from "./run-summary";
import { failRun } from "./runs";
import type { Db } from "./types";

export type IngestResult = {
  /** Events with seq > the stored lastSeq before this batch, in seq order: what subscribers have not seen. */
  fresh: RunEvent[];
  lastSeq: number;
  status: RunStatus;
  error: string | null;
  statusChanged: boolean;
};

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "stopped"]);

/**
 * Postgres text and jsonb reject NUL characters and unpaired surrogates, which sampled text or a
 * scenario's logs can contain; one such string would fail its batch on every retry and stall the run's
 * ingestion. Both become U+FFFD, in the stored copy and in what subscribers receive.
 */
export function storableStrings<T>(value: T): T {
  if (typeof value === "string") {
    // NUL, and a high surrogate not followed by a low one, or a low one not preceded by a high one.
    return value.replace(/\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD") as T;
  }
  if (Array.isArray(value)) return value.map(storableStrings) as T;
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableStrings(k), storableStrings(v)])) as T;
  }
  return value;
}

/**
 * Stores one batch of a run's events in one transaction (see the file comment). Events must belong to
 * `runId`; their order in the array does not matter.
 */
export async function ingestEvents(db: Db, runId: string, events: RunEvent[]): Promise<IngestResult> {
  const sorted = events.map(storableStrings).sort((a, b) => a.seq - b.seq);
  for (const e of sorted) {
    if (e.run_id !== runId) throw new AppError("BAD_INPUT", `event seq ${e.seq} belongs to run ${e.run_id}, not ${runId}`);
  }
  return db.$transaction(
    async (tx) => {
      // The row lock serialises concurrent batches of one run, so "seq > lastSeq" is decided once.
      const locked = await tx.$queryRaw<
        { lastSeq: number; status: RunStatus; error: string | null; kind: string; currentStep: number; startedAt: Date | null }[]
      >`SELECT "lastSeq", "status"::text AS "status", "error", "kind"::text AS "kind", "currentStep", "startedAt"
        FROM "Run" WHERE "id" = ${runId} FOR UPDATE`;
      const run = locked[0];
      if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);

      if (sorted.length > 0) {
        await tx.runEvent.createMany({ data: sorted.map((e) => eventToRow(runId, e)), skipDuplicates: true });
      }
      const seen = new Set<number>();
      const fresh = sorted.filter((e) => e.seq > run.lastSeq && !seen.has(e.seq) && seen.add(e.seq));
      if (fresh.length === 0) {
        return { fresh, lastSeq: run.lastSeq, status: run.status, error: run.error, statusChanged: false };
      }

      const trajectories: Prisma.TrajectoryCreateManyInput[] = [];
      let rollouts = 0;
      let errors = 0;
      let rewardSum = 0;
      let rewardCount = 0;
      let currentStep: number | undefined;
      let status: RunStatus = run.status;
      let error = run.error;
      let diagnostics: Prisma.InputJsonValue | undefined;
      let startedAt: Date | undefined;
      let finishedAt: Date | undefined;
      // The runs table's summary metrics (last step's, last eval's), merged into Run.summary below.
      const summary: RunSummary = {};
      const bumpStep = (s: number) => {
        currentStep = currentStep === undefined ? s : Math.max(currentStep, s);
      };

      for (const e of fresh) {
        Object.assign(summary, summaryPatch(e));
        switch (e.type) {
          case "run.started":
            if (status === "queued" || status === "running") status = "running";
            startedAt ??= new Date(e.ts);
            break;
          case "rollout.finished": {
            const t = e.payload;
            trajectories.push(trajectoryToRow(runId, e.seq, t));
            rollouts++;
            if (t.error) errors++;
            // The run's headline reward: training rollouts (validation ones only for eval runs).
            const counted = run.kind === "eval" ? t.split === "val" : t.split === "train";
            if (counted && t.reward !== null && Number.isFinite(t.reward)) {
              rewardSum += t.reward;
              rewardCount++;
            }
            if (t.split === "train") bumpStep(t.step);
            break;
          }
          case "step.finished":
            await tx.step.upsert({
              where: { runId_step: { runId, step: e.payload.step } },
              create: { runId, step: e.payload.step, metrics: e.payload as unknown as Prisma.InputJsonValue },
              update: { metrics: e.payload as unknown as Prisma.InputJsonValue },
            });
            bumpStep(e.payload.step);
            break;
          case "checkpoint.saved":
            await tx.checkpoint.upsert({
              where: { runId_step: { runId, step: e.payload.step } },
              create: { runId, step: e.payload.step, path: e.payload.path, sizeBytes: BigInt(e.payload.size_bytes) },
              update: { path: e.payload.path, sizeBytes: BigInt(e.payload.size_bytes) },
            });
            break;
          case "run.finished":
            // A run already failed here (e.g. "runner lost the run") keeps its first verdict.
            if (!TERMINAL.has(status)) {
              status = e.payload.status;
              error = e.payload.error;
              if (e.payload.diagnostics.length > 0) diagnostics = e.payload.diagnostics as Prisma.InputJsonValue;
              finishedAt = new Date(e.ts);
            }
            break;
          case "run.log":
          case "train.progress":
          case "eval.finished":
            break; // kept in the event log only (runs.get reads eval.finished from there)
        }
      }

      if (trajectories.length > 0) await tx.trajectory.createMany({ data: trajectories, skipDuplicates: true });
      if (Object.keys(summary).length > 0) {
        // jsonb || merges in SQL: keys this batch did not touch (an earlier eval's eval_reward) stay.
        await tx.$executeRaw`UPDATE "Run" SET "summary" = "summary" || ${JSON.stringify(summary)}::jsonb WHERE "id" = ${runId}`;
      }
      const last = fresh[fresh.length - 1]!;
      await tx.run.update({
        where: { id: runId },
        data: {
          lastSeq: last.seq,
          lastHeartbeatAt: new Date(),
          rolloutCount: { increment: rollouts },
          errorCount: { increment: errors },
          rewardSum: { increment: rewardSum },
          rewardCount: { increment: rewardCount },
          status,
          error,
          ...(currentStep !== undefined && currentStep > run.currentStep ? { currentStep } : {}),
          ...(startedAt && !run.startedAt ? { startedAt } : {}),
          ...(finishedAt ? { finishedAt } : {}),
          ...(diagnostics !== undefined ? { diagnostics } : {}),
        },
      });
      return { fresh, lastSeq: last.seq, status, error, statusChanged: status !== run.status };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
}

/** Ingest a batch and tell socket subscribers about what was new. */
export async function ingestAndEmit(db: Db, runId: string, events: RunEvent[]): Promise<IngestResult> {
  const res = await ingestEvents(db, runId, events);
  if (res.fresh.length > 0) emitRunEvents(runId, res.fresh);
  if (res.statusChanged) emitRunStatus({ runId, status: res.status, error: res.error, lastSeq: res.lastSeq });
  if (res.fresh.length > 0) schedulePostIngest(db, runId, res); // pathology flags, run-ended alerts (not awaited)
  return res;
}

/** Longer than runs.start's validate + start timeouts (60 s each) together. */
const QUEUED_LOST_AFTER_MS = 180_000;
const QUEUED_FOLLOW_AFTER_MS = 10_000;

export type IngestOptions = {
  /** Flush a run's buffer after this long… */
  flushMs?: number;
  /** …or as soon as it holds this many events. */
  maxBatch?: number;
  /** How often to look for running runs nobody follows and for runs their runner lost. */
  scanMs?: number;
  /** A run its runner does not know and that sent nothing for this long is failed ("runner lost the run"). */
  lostAfterMs?: number;
  maxBackoffMs?: number;
  runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  log?: (msg: string) => void;
};

/** Follows one run's event stream: buffer → batch → ingest; reconnects with backoff. */
class RunFollower {
  private buffer: RunEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private sub: RunnerSubscription | undefined;
  private chain: Promise<void> = Promise.resolve();
  private backoffMs = 1_000;
  private generation = 0;
  closed = false;
  finished = false;
  /** When the last event arrived (0 = none yet: connecting is not a sign of life). */
  lastActivity = 0;

  constructor(
    readonly runId: string,
    private readonly db: Db,
    private readonly opts: Required<Omit<IngestOptions, "log">> & { log: (msg: string) => void },
    private readonly onDone: (f: RunFollower) => void,
  ) {}

  async connect(): Promise<void> {
    if (this.closed) return;
    const gen = ++this.generation;
    try {
      const run = await this.db.run.findUnique({ where: { id: this.runId }, select: { lastSeq: true, status: true, runnerId: true } });
      if (!run || !run.runnerId || TERMINAL.has(run.status)) return this.close();
      const runner = await this.opts.runnerFor(run.runnerId);
      if (this.closed || gen !== this.generation) return;
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
    if (this.buffer.length >= this.opts.maxBatch) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), this.opts.flushMs);
  }

  /** Serialised: one batch at a time per run. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    if (batch.length === 0) return this.chain;
    this.chain = this.chain.then(async () => {
      try {
        const res = await ingestAndEmit(this.db, this.runId, batch);
        if (TERMINAL.has(res.status)) {
          this.finished = true;
          this.close();
        }
      } catch (e) {
        // The events are still on the runner: drop the stream and resume after the stored lastSeq.
        this.opts.log(`run ${this.runId}: storing ${batch.length} events failed: ${e instanceof Error ? e.message : String(e)}`);
        this.dropped("store failed");
      }
    });
    return this.chain;
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
      this.reconnectTimer = setTimeout(() => void this.connect(), delay);
    });
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

export class IngestService {
  private followers = new Map<string, RunFollower>();
  private scanTimer: NodeJS.Timeout | undefined;
  private scanning = false;
  private readonly opts: Required<Omit<IngestOptions, "log">> & { log: (msg: string) => void };
  private stopped = false;

  constructor(
    private readonly db: Db,
    opts: IngestOptions,
  ) {
    this.opts = {
      flushMs: 1_000,
      maxBatch: 200,
      scanMs: 5_000,
      lostAfterMs: 30_000,
      maxBackoffMs: 30_000,
      log: (m) => console.warn(`[ingest] ${m}`),
      ...opts,
    };
  }

  /** Resume every run the database says is running, and keep scanning. */
  async start(): Promise<void> {
    setIngestHook(this);
    await this.scan();
    this.scanTimer = setInterval(() => void this.scan(), this.opts.scanMs);
    this.scanTimer.unref();
  }

  follow(runId: string): void {
    if (this.stopped || this.followers.has(runId)) return;
    const f = new RunFollower(runId, this.db, this.opts, (done) => {
      if (this.followers.get(done.runId) === done) this.followers.delete(done.runId);
    });
    this.followers.set(runId, f);
    void f.connect();
  }

  isFollowing(runId: string): boolean {
    return this.followers.has(runId);
  }

  /** Follow running runs nobody follows; fail the ones their runner lost. */
  async scan(): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    try {
      const active = await this.db.run.findMany({
        where: { status: { in: ["queued", "running"] } },
        select: { id: true, status: true, runnerId: true, createdAt: true, startedAt: true, lastHeartbeatAt: true },
      });
      // Queued runs too, once their start call has had time to finish: a start the runner accepted whose
      // "running" update was lost still gets its events (run.started makes it running).
      const now = Date.now();
      for (const r of active) {
        if (r.status === "running" || (r.runnerId && now - r.createdAt.getTime() > QUEUED_FOLLOW_AFTER_MS)) this.follow(r.id);
      }
      await this.checkLost(active);
    } catch (e) {
      this.opts.log(`scan failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.scanning = false;
    }
  }

  private async checkLost(
    active: { id: string; status: string; runnerId: string | null; createdAt: Date; startedAt: Date | null; lastHeartbeatAt: Date | null }[],
  ): Promise<void> {
    const now = Date.now();
    const quiet = active.filter((r) => {
      const follower = this.followers.get(r.id);
      const last = Math.max(r.lastHeartbeatAt?.getTime() ?? 0, r.startedAt?.getTime() ?? 0, r.createdAt.getTime(), follower?.lastActivity ?? 0);
      // A queued run may still be inside runs.start (validate + start can take minutes on a busy runner).
      const threshold = r.status === "queued" ? Math.max(this.opts.lostAfterMs, QUEUED_LOST_AFTER_MS) : this.opts.lostAfterMs;
      return now - last > threshold;
    });
    const byRunner = new Map<string, typeof quiet>();
    for (const r of quiet) {
      if (!r.runnerId) {
        await failRun(this.db, r.id, "no runner was assigned to the run");
        continue;
      }
      byRunner.set(r.runnerId, [...(byRunner.get(r.runnerId) ?? []), r]);
    }
    for (const [runnerId, runs] of byRunner) {
      let known: Set<string>;
      try {
        const runner = await this.opts.runnerFor(runnerId);
        known = new Set((await runner.status()).runs.map((r) => r.run_id));
      } catch {
        continue; // a runner that is down has not lost anything yet: its runs resume when it is back
      }
      for (const r of runs) {
        if (known.has(r.id)) continue;
        if (await failRun(this.db, r.id, "runner lost the run (it no longer knows it, and no events arrived)")) {
          this.opts.log(`run ${r.id}: runner lost the run`);
        }
        this.followers.get(r.id)?.close();
      }
    }
  }

  /** Stop scanning and following; buffered events are stored first. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    setIngestHook(undefined);
    await Promise.all([...this.followers.values()].map((f) => f.shutdown()));
    this.followers.clear();
  }
}
