/**
 * "Mean reward" of a run: ONE definition, used by the run page's header, the runs table (its column and
 * sort), the editor's recent runs, Run.rewardSum / rewardCount (ingestion) and compare.
 *
 *   mean reward = the mean of the rewards of the run's rollouts that count, over the whole run, where
 *   - a rollout counts when it is of the run's own split: train rollouts for train and dry runs,
 *     validation rollouts for eval runs (a train run's periodic evals have their own "eval reward");
 *   - a rollout that failed (reward null, or not a finite number) has no reward and is left out of the mean
 *     (it shows in the error count instead);
 *   - a step redone after a resume counts once: a rollout re-emitted under the same trajectory id replaces
 *     the earlier attempt's (the ids derive from run, step, group and rollout index).
 *
 * The last step's mean ("Reward (last step)", StepMetrics.reward_mean) is a different number with its own
 * name; nothing calls it "mean reward".
 */
import type { RunKind } from "./config";

export const MEAN_REWARD_DEFINITION =
  "Mean of the rewards of all the run's rollouts of its own split (train rollouts for train and dry runs, validation rollouts for evals); failed rollouts are left out; a redone step counts once.";

/** The split whose rollouts make a run's mean reward. */
export const meanRewardSplit = (kind: RunKind): "train" | "val" => (kind === "eval" ? "val" : "train");

/** The reward a rollout adds to its run's mean reward, or null when it adds nothing. */
export function countedReward(kind: RunKind, t: { split: "train" | "val"; reward: number | null }): number | null {
  if (t.split !== meanRewardSplit(kind)) return null;
  return t.reward !== null && Number.isFinite(t.reward) ? t.reward : null;
}

/** The run's mean reward from its rollouts (each id once: pass the latest attempt of each). */
export function meanReward(kind: RunKind, rollouts: Iterable<{ split: "train" | "val"; reward: number | null }>): number | null {
  let sum = 0;
  let n = 0;
  for (const t of rollouts) {
    const r = countedReward(kind, t);
    if (r === null) continue;
    sum += r;
    n++;
  }
  return n > 0 ? sum / n : null;
}

/** From the stored sums (Run.rewardSum / Run.rewardCount, kept by ingestion with countedReward). */
export const meanRewardOf = (r: { rewardSum: number; rewardCount: number }): number | null => (r.rewardCount > 0 ? r.rewardSum / r.rewardCount : null);
