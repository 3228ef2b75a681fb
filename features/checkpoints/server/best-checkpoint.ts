/**
 * A run's best checkpoint: the one its own validation eval scored highest, among the checkpoints it still
 * has. What the checkpoints panel marks, what `<run>@best` serves (checkpoints.ts resolveModel), what the
 * checkpoints export names and what the keep-best retention never deletes (checkpoint-retention.ts).
 *
 * Which evals count: the run's eval at step s samples checkpoint s (run-loop: runEval(…, checkpointModel(run, s))),
 * so an eval.finished whose model is `<run id>@<step>` scores that checkpoint. The eval before the first step
 * (the base model) and evals with no reward (every rollout failed) score none. A later eval of the same
 * checkpoint (after a resume) replaces the earlier one.
 *
 * Ties go to the EARLIEST step: it reached that score with the fewest updates away from the base model, and
 * the mark stays put while a healthy run plateaus (0.875, 0.875, …) instead of hopping to each new step.
 */
import { checkpointModelName, EvalMetrics } from "@contracts";
import type { DbOrTx } from "@/server/db-types";

export interface BestCheckpoint {
  step: number;
  /** Mean validation reward of the run's eval of that checkpoint. */
  reward: number;
}

/** Each run's validation reward per checkpoint step (null: an eval whose rollouts all failed). */
async function evalRewardsOf(db: DbOrTx, runIds: string[]): Promise<Map<string, Map<number, number | null>>> {
  const evals = await db.runEvent.findMany({ where: { runId: { in: runIds }, type: "eval.finished" }, orderBy: { seq: "asc" }, select: { runId: true, payload: true } });
  const out = new Map(runIds.map((id) => [id, new Map<number, number | null>()]));
  for (const e of evals) {
    const m = EvalMetrics.safeParse(e.payload);
    if (m.success && m.data.model === checkpointModelName(e.runId, m.data.step)) out.get(e.runId)?.set(m.data.step, m.data.reward_mean);
  }
  return out;
}

/** The run's validation reward per checkpoint step (null: an eval whose rollouts all failed). */
export async function evalRewardsByStep(db: DbOrTx, runId: string): Promise<Map<number, number | null>> {
  return (await evalRewardsOf(db, [runId])).get(runId)!;
}

/** The best of `steps` (the checkpoints that exist) by `rewards`; ties → the earliest; none scored → null. */
export function pickBest(rewards: ReadonlyMap<number, number | null>, steps: readonly number[]): BestCheckpoint | null {
  let best: BestCheckpoint | null = null;
  for (const step of [...steps].sort((a, b) => a - b)) {
    const reward = rewards.get(step);
    if (typeof reward !== "number" || !Number.isFinite(reward)) continue;
    if (best === null || reward > best.reward) best = { step, reward };
  }
  return best;
}

/** Each run's best checkpoint now (its stored Checkpoint rows and eval events); runs with none are left out. */
export async function bestCheckpoints(db: DbOrTx, runIds: string[]): Promise<Map<string, BestCheckpoint>> {
  if (runIds.length === 0) return new Map();
  const [rewards, rows] = await Promise.all([
    evalRewardsOf(db, runIds),
    db.checkpoint.findMany({ where: { runId: { in: runIds } }, select: { runId: true, step: true } }),
  ]);
  const steps = new Map<string, number[]>();
  for (const r of rows) steps.set(r.runId, [...(steps.get(r.runId) ?? []), r.step]);
  const out = new Map<string, BestCheckpoint>();
  for (const id of runIds) {
    const best = pickBest(rewards.get(id)!, steps.get(id) ?? []);
    if (best) out.set(id, best);
  }
  return out;
}

/** The run's best checkpoint now, or null. */
export async function bestCheckpoint(db: DbOrTx, runId: string): Promise<BestCheckpoint | null> {
  return (await bestCheckpoints(db, [runId])).get(runId) ?? null;
}
