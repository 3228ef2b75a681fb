/**
 * A train run that trains on nothing stops itself: on an overloaded runner (or with a scenario that always
 * throws) every rollout of a step can fail, no group has rewards to compare, and the run used to train
 * empty steps to the end, saving checkpoints of nothing. After limits.fail_after_empty_steps such steps in a
 * row — no trainable group, and at least limits.empty_step_exception_rate of the rollouts failed — the run
 * stops as failed, before training and checkpointing that step, with the reason and the most frequent error.
 * A step with valid rollouts that merely tie (all 0) is not "empty" here: that is reward collapse, the
 * pathology flags' business, and the run may still learn.
 */
import type { LimitsConfig, Trajectory } from "../../../contracts";
import { isTrainableGroup } from "./metrics";

export class EmptyStepGuard {
  private streak: number[] = [];

  constructor(private readonly limits: Pick<LimitsConfig, "fail_after_empty_steps" | "empty_step_exception_rate">) {}

  /** After a step's rollouts are in: null to train it, else why the run must stop now. */
  check(step: number, groups: readonly (readonly Trajectory[])[]): string | null {
    const all = groups.flat();
    const failed = all.filter((t) => t.error !== null);
    const rate = all.length === 0 ? 1 : failed.length / all.length;
    const empty = !groups.some(isTrainableGroup) && rate >= this.limits.empty_step_exception_rate;
    this.streak = empty ? [...this.streak, step] : [];
    const limit = this.limits.fail_after_empty_steps;
    if (limit === 0 || this.streak.length < limit) return null;
    const steps = this.streak.length === 1 ? `step ${step}` : `steps ${this.streak[0]}–${step}`;
    return (
      `${steps} had nothing to train on: no group with two valid rollouts of different rewards, and ${Math.round(rate * 100)}% of ` +
      `step ${step}'s ${all.length} rollouts failed${mostFrequent(failed)}. Stopped before training on nothing ` +
      `(limits.fail_after_empty_steps ${limit}); fix the cause and Resume.`
    );
  }
}

function mostFrequent(failed: readonly Trajectory[]): string {
  const counts = new Map<string, number>();
  for (const t of failed) {
    const m = `${t.error!.kind}: ${t.error!.message.length > 200 ? `${t.error!.message.slice(0, 200)}…` : t.error!.message}`;
    counts.set(m, (counts.get(m) ?? 0) + 1);
  }
  const top = [...counts].sort((a, b) => b[1] - a[1])[0];
  return top ? ` (most often, ${top[1]}×: ${top[0]})` : "";
}
