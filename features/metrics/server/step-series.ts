/**
 * The charts' per-step rows (the StepSeries table): a step's chart fields from its Step row (reward mean and
 * std, exception rate, tokens/s, the step time split, the trainer's metrics) and the aggregates of its train
 * rollouts (reward min/max, mean completion length, sampled tokens, the mean of each `metrics` key), as typed
 * columns — what run-series-columns.ts reads. Ingest keeps them in the transaction that stores the steps and
 * trajectories, so the first load of a long run reads one row per step instead of aggregating every rollout
 * and parsing every Step's json (docs/benchmarks.md, "Charts").
 *
 * The computation itself is one SQL function, `refresh_step_series`, defined in the migration that made the
 * table (prisma/migrations/*_step_series/): the same code backfilled the runs stored before it. It sets a
 * step's row to what the step's Step and Trajectory rows give now, so it is idempotent: a re-delivered batch or
 * a rollout replaced by a redone step never counts twice.
 */
import type { Tx } from "@/server/db-types";

/**
 * Recomputes the rows of these steps of the run from their stored Step and train Trajectory rows. Call it in
 * the transaction that wrote (or deleted) those rows, with every step it touched: only those steps are read.
 */
export async function refreshStepSeries(tx: Tx, runId: string, steps: Iterable<number>): Promise<void> {
  const list = [...new Set(steps)];
  if (list.length === 0) return;
  await tx.$executeRaw`SELECT "refresh_step_series"(${runId}, ${list}::int[])`;
}
