/**
 * Both advantages of a run's stored rollouts (contracts/signals.ts: reward − group mean, and the one the
 * trainer used under the run's frozen trainer.scale_rewards), read from Postgres: what the JSONL export
 * writes and the token view shows beside the trainer's own number. One definition with the run page's panels,
 * which compute it from the same rollouts in the browser.
 */
import { runRolloutAdvantages, type RolloutAdvantage, type RunConfig } from "@contracts";
import type { DbOrTx } from "@/server/db-types";

/** The run's trainer.scale_rewards as frozen at its start (the default, true, for a config without it). */
export function frozenScaleRewards(config: unknown): boolean {
  return (config as Partial<RunConfig> | null)?.trainer?.scale_rewards ?? true;
}

/**
 * Per rollout id, both advantages of the run's train rollouts (eval rollouts have none), optionally of one
 * step or one group only: a group is never split, so each advantage sees its whole group.
 */
export async function runAdvantages(
  db: DbOrTx,
  runId: string,
  scaleRewards: boolean,
  only: { step?: number; group?: number } = {},
): Promise<Map<string, RolloutAdvantage>> {
  const rows = await db.trajectory.findMany({
    where: { runId, split: "train", ...(only.step !== undefined ? { step: only.step } : {}), ...(only.group !== undefined ? { group: only.group } : {}) },
    select: { id: true, step: true, group: true, split: true, reward: true, error: true, tokens: true },
    orderBy: { seq: "asc" },
  });
  return runRolloutAdvantages(
    rows.map((r) => ({
      id: r.id,
      step: r.step,
      group: r.group,
      split: "train" as const,
      reward: r.reward,
      error: r.error ?? null,
      tokens: (r.tokens ?? null) as { prompt?: number; completion?: number } | null,
    })),
    scaleRewards,
  );
}
