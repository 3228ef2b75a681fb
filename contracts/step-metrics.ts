/**
 * Step and eval metrics from a step's finished rollouts (pure functions: unit tested in
 * gpu-runner/src/loop/metrics.test.ts). Shared: the runner computes them for its steps, the web server for
 * the steps an ART client logs (features/art), so both kinds of run chart the same numbers.
 */
import type { EvalMetrics, StepMetrics, Trajectory } from "./run";
import type { TrainMetrics } from "./train";

export function mean(xs: readonly number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

/** Population standard deviation (what GRPO normalises advantages by). */
export function std(xs: readonly number[]): number | null {
  const m = mean(xs);
  if (m === null) return null;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
}

function validRewards(group: readonly Trajectory[]): number[] {
  return group.filter((t) => t.error === null && typeof t.reward === "number").map((t) => t.reward as number);
}

/** A group teaches something only with ≥ 2 valid rollouts whose rewards differ. */
export function isTrainableGroup(group: readonly Trajectory[]): boolean {
  const rewards = validRewards(group);
  return rewards.length >= 2 && (std(rewards) ?? 0) > 0;
}

/** Judge usage summed over rollouts (recorded on each by the runner). */
function judgeTotals(rollouts: readonly Trajectory[]): { judge_tokens: number; judge_cost_usd: number } {
  let tokens = 0;
  let cost = 0;
  for (const t of rollouts) {
    tokens += t.metrics.judge_tokens ?? 0;
    cost += t.metrics.judge_cost_usd ?? 0;
  }
  return { judge_tokens: tokens, judge_cost_usd: cost };
}

/** Seconds; null where not measured (an ART client's logged step sampled and trained elsewhere: not 0 s). */
export interface StepTimings {
  rolloutS: number | null;
  trainS: number | null;
  stepS: number | null;
}

export function computeStepMetrics(
  step: number,
  groups: readonly (readonly Trajectory[])[],
  trainer: TrainMetrics | null,
  timings: StepTimings,
): StepMetrics {
  const all = groups.flat();
  const rewards = all.flatMap((t) => (t.error === null && typeof t.reward === "number" ? [t.reward] : []));
  // Mean over groups of the within-group std: the signal GRPO actually learns from.
  const groupStds = groups.map(validRewards).filter((r) => r.length >= 2).map((r) => std(r) as number);
  const completionTokens = all.reduce((n, t) => n + t.tokens.completion, 0);
  return {
    step,
    reward_mean: mean(rewards),
    reward_std_within_group: mean(groupStds),
    exception_rate: all.length ? all.filter((t) => t.error !== null).length / all.length : 0,
    groups_trainable: trainer ? trainer.groups_trainable : groups.filter(isTrainableGroup).length,
    rollouts: all.length,
    rollout_s: timings.rolloutS,
    train_s: timings.trainS,
    step_s: timings.stepS,
    tokens_per_s: timings.rolloutS !== null && timings.rolloutS > 0 ? completionTokens / timings.rolloutS : null,
    ...judgeTotals(all),
    trainer,
  };
}

export function computeEvalMetrics(step: number, model: string, rollouts: readonly Trajectory[]): EvalMetrics {
  const rewards = validRewards(rollouts);
  return {
    step,
    model,
    reward_mean: mean(rewards),
    reward_std: std(rewards),
    exception_rate: rollouts.length ? rollouts.filter((t) => t.error !== null).length / rollouts.length : 0,
    rollouts: rollouts.length,
    ...judgeTotals(rollouts),
  };
}
