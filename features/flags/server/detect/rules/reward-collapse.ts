/**
 * Reward collapse: the groups lose their reward variance, so GRPO has nothing to learn from (a group
 * whose rollouts all score alike has zero advantage). The default template's failure — every rollout the
 * same long sentence scoring 0.200 — is this with 0 trainable groups.
 */
import type { FlagThresholds } from "../config";
import type { Flag, RuleInput } from "../types";
import { fmt, rolloutIdsAt, stepRange, streaks } from "./shared";

export function rewardCollapse({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const fraction = (groups: number, trainable: number) => (groups > 0 ? trainable / groups : 1);
  return streaks(steps, (s) => s.groups > 0 && fraction(s.groups, s.groups_trainable) <= t.minTrainableFraction, t.collapseSteps).map((run) => {
    const last = run[run.length - 1]!;
    const none = run.every((s) => s.groups_trainable === 0);
    const stepNums = run.map((s) => s.step);
    // The rollouts of the groups with no variance: reward identical across the group.
    const zeroVar = new Set<string>();
    for (const s of stepNums) {
      const byGroup = new Map<number, (number | null)[]>();
      for (const r of rollouts) if (r.step === s) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r.reward]);
      for (const [g, rewards] of byGroup) if (new Set(rewards).size <= 1) zeroVar.add(`${s}:${g}`);
    }
    const constant = rollouts.find((r) => r.step === last.step && zeroVar.has(`${r.step}:${r.group}`))?.reward;
    const detail =
      none && constant !== undefined && constant !== null
        ? ` (every group's rollouts score alike, e.g. ${fmt(constant, 3)})`
        : ` (${last.groups_trainable} of ${last.groups} groups trainable at step ${last.step})`;
    return {
      rule: "reward_collapse",
      severity: none ? "critical" : "warning",
      message: `${none ? "No group has reward variance" : `At most ${fmt(t.minTrainableFraction * 100, 0)}% of groups have reward variance`} on ${stepRange(run)}${detail}: GRPO has nothing to learn from.`,
      firstStep: run[0]!.step,
      lastStep: last.step,
      steps: stepNums,
      rolloutIds: rolloutIdsAt(rollouts, stepNums, t, (r) => zeroVar.has(`${r.step}:${r.group}`)),
    } satisfies Flag;
  });
}
