/**
 * The per-step aggregates of a run's train rollouts (the StepRollouts table): reward min/max, mean completion
 * length, sampled tokens, and the mean of each `metrics` key — what the charts read per step
 * (run-series-columns.ts). Ingest keeps them in the transaction that stores the trajectories, so the first
 * load of a long run reads one row per step instead of aggregating every rollout (docs/benchmarks.md, "Charts").
 *
 * The aggregation itself is one SQL function, `refresh_step_rollouts`, defined in the migration that made the
 * table (prisma/migrations/*_step_rollouts/): the same code backfilled the runs stored before it. It sets a
 * step's row to what the step's Trajectory rows add up to now, so it is idempotent: a re-delivered batch or a
 * rollout replaced by a redone step never counts twice.
 */
import type { Tx } from "@/server/db-types";

/**
 * Recomputes the rows of these steps of the run from their stored train rollouts. Call it in the transaction
 * that wrote (or deleted) those rollouts, with every step it touched: only those steps are read.
 */
export async function refreshStepRollouts(tx: Tx, runId: string, steps: Iterable<number>): Promise<void> {
  const list = [...new Set(steps)];
  if (list.length === 0) return;
  await tx.$executeRaw`SELECT "refresh_step_rollouts"(${runId}, ${list}::int[])`;
}
