/**
 * Groups that lose their reward variance, so GRPO has nothing to learn from (a group whose rollouts all
 * score alike has zero advantage). Two different things look like that, and are told apart:
 *
 * - **collapsed** (warning, critical when no group varies): the groups tie at a low reward. The default
 *   template's old failure — every rollout the same long sentence scoring 0.200 — is this.
 * - **converged** (info): the groups tie because every sample scores at the top the run has reached, after
 *   the reward rose. That is the run succeeding (say-the-word's "every reply is the bare word", 1.000); it
 *   is said, with what to do next (harder tasks, a new split), but never alerted.
 *
 * Calibrated on the flag corpus (bench/flag-corpus, docs/benchmarks.md "Flags"): healthy learning-bench runs
 * raise "converged" and no collapse; the seeded pathology (a reward that always answers 0.2) raises collapse.
 */
import type { FlagThresholds } from "../config";
import type { Flag, RolloutInput, RuleInput, StepInput } from "../types";
import { fmt, mean, rolloutIdsAt, stepRange, streaks } from "./shared";

/** The constant reward of every zero-variance group at these steps, keyed "step:group". */
function tiedGroups(rollouts: RolloutInput[], stepNums: number[]): Map<string, number | null> {
  const at = new Set(stepNums);
  const byGroup = new Map<string, (number | null)[]>();
  for (const r of rollouts) if (at.has(r.step)) byGroup.set(`${r.step}:${r.group}`, [...(byGroup.get(`${r.step}:${r.group}`) ?? []), r.reward]);
  const tied = new Map<string, number | null>();
  for (const [key, rewards] of byGroup) if (new Set(rewards).size <= 1) tied.set(key, rewards[0] ?? null);
  return tied;
}

/**
 * Whether the tied groups sit at the top: the run's reward rose from its first steps to its best, and (most
 * of) the tied groups score that best. A reward that never moved (always 0.2) has top = start: not converged.
 */
function atTheTop(steps: StepInput[], rollouts: RolloutInput[], tied: Map<string, number | null>, t: FlagThresholds): { top: number; start: number } | null {
  const rewards = rollouts.flatMap((r) => (r.reward !== null && Number.isFinite(r.reward) && !r.failed ? [r.reward] : []));
  if (!rewards.length || !tied.size) return null;
  const top = Math.max(...rewards);
  const start = mean(steps.slice(0, t.baselineSteps).flatMap((s) => (s.reward_mean === null ? [] : [s.reward_mean])));
  if (start === null || top - start < t.convergedMinRise) return null;
  const near = (x: number | null) => x !== null && x >= top - t.convergedTopTolerance * Math.max(Math.abs(top), 1e-9);
  const atTop = [...tied.values()].filter(near).length;
  return atTop / tied.size >= t.convergedTopShare ? { top, start } : null;
}

export function rewardCollapse({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const fraction = (groups: number, trainable: number) => (groups > 0 ? trainable / groups : 1);
  return streaks(steps, (s) => s.groups > 0 && fraction(s.groups, s.groups_trainable) <= t.minTrainableFraction, t.collapseSteps).map((run) => {
    const last = run[run.length - 1]!;
    const stepNums = run.map((s) => s.step);
    const tied = tiedGroups(rollouts, stepNums);
    const ids = rolloutIdsAt(rollouts, stepNums, t, (r) => tied.has(`${r.step}:${r.group}`));
    const top = atTheTop(steps, rollouts, tied, t);
    if (top) {
      return {
        rule: "converged",
        severity: "info",
        message:
          `Converged on ${stepRange(run)}: the groups stopped varying because every sample scores at the top (${fmt(top.top, 3)}, from ${fmt(top.start, 3)} ` +
          `at the start), so GRPO has little left to learn from these tasks. Harder tasks, or a new split of them, would give it more.`,
        firstStep: run[0]!.step,
        lastStep: last.step,
        steps: stepNums,
        rolloutIds: ids,
      } satisfies Flag;
    }
    const none = run.every((s) => s.groups_trainable === 0);
    const constant = rollouts.find((r) => r.step === last.step && tied.has(`${r.step}:${r.group}`))?.reward;
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
      rolloutIds: ids,
    } satisfies Flag;
  });
}
