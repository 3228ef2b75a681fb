/**
 * Ingestion: the web server consumes each running run's event stream from its runner and writes it to
 * Postgres, then fans it out to browsers (socket.io room `run:<id>`).
 *
 * Idempotent by construction: every batch is ONE transaction that locks the Run row, stores the events
 * with skipDuplicates on (runId, seq), and applies projections (trajectories, steps, the charts' per-step
 * rows of both, checkpoints, counters, status) only for events with seq > the run's stored
 * lastSeq, then advances lastSeq. Re-delivery after a reconnect, a web restart or a runner replay therefore
 * changes nothing. Subscriptions resume after the stored lastSeq, so nothing is skipped either.
 */
import { countedReward, type RunEvent, type RunStatus, type StepMetrics, type Trajectory } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import { insertEvents, insertTrajectoriesFromEvents, upsertSteps } from "./sql";
import { refreshStepSeries } from "@/features/metrics/server";
import { fromDbKind } from "@/server/run-convert";
import { applyRunnerEvents } from "../lifecycle";
import { summaryPatch, type RunSummary } from "../run-summary";
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
  /** `expectLastSeq` was given and the run's stored lastSeq differs (another writer got there first): nothing was stored. */
  conflict?: boolean;
};

export interface IngestOpts {
  /**
   * For a writer that numbers its own events (the ART API, features/art): store the batch only if the run's
   * lastSeq is still this, decided under the run's row lock; otherwise store nothing and answer `conflict`,
   * so the writer renumbers after the newer lastSeq and tries again. Two such writers never share a seq.
   */
  expectLastSeq?: number;
}


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
export async function ingestEvents(db: Db, runId: string, events: RunEvent[], fromRunnerId?: string, opts: IngestOpts = {}): Promise<IngestResult> {
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
          kind: "train" | "dry_run" | "eval" | "art" | "tinker";
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
      if (opts.expectLastSeq !== undefined && run.lastSeq !== opts.expectLastSeq) return { fresh: [], ...unchanged, conflict: true };

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
      // The charts' rows of every step whose Step or rollouts changed, from what is stored now (step-series.ts).
      await refreshStepSeries(tx, runId, [...counters.steps, ...steps.keys()]);
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
 * stored trajectories add up to. Redelivery (the same or an older seq) changes nothing. Also returns the steps
 * whose rollouts changed (a replaced rollout's old step too).
 */
async function storeTrajectories(
  tx: Prisma.TransactionClient,
  runId: string,
  kind: ReturnType<typeof fromDbKind>,
  rows: { seq: number; t: Trajectory }[],
): Promise<Counters & { steps: number[] }> {
  const delta: Counters = { rollouts: 0, errors: 0, rewardSum: 0, rewardCount: 0 };
  if (rows.length === 0) return { ...delta, steps: [] };
  const add = (c: Counters, sign: 1 | -1) => {
    delta.rollouts += sign * c.rollouts;
    delta.errors += sign * c.errors;
    delta.rewardSum += sign * c.rewardSum;
    delta.rewardCount += sign * c.rewardCount;
  };
  const existing = await tx.trajectory.findMany({
    where: { runId, id: { in: rows.map((r) => r.t.id) } },
    select: { id: true, seq: true, step: true, split: true, reward: true, error: true },
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
  // Projected in SQL from the events just stored (sql.ts): each rollout's JSON is parsed once.
  if (fresh.length > 0) await insertTrajectoriesFromEvents(tx, runId, fresh.map((r) => r.seq));
  return { ...delta, steps: [...fresh.map((r) => r.t.step), ...replaced.map((t) => t.step)] };
}
