/**
 * Length drift: completions growing (or shrinking) far from where the run started. Two cases are told apart:
 *
 * - **with the reward** (info): the reward pays for the new length — across the rollouts, length and reward
 *   move together in the direction the length went, and the reward rose. say-the-word's replies shrink from
 *   a sentence to one word because the reward asks for one word: that is learning, said but not alerted.
 * - **against the reward** (warning): the length moved while the reward did not ask for it (the reward fell
 *   or stayed, or longer replies score no better): degeneration, a KL drift, a truncation problem.
 *
 * A length the reward pays for and a quality it trades away is reward hacking, which reward-hacking.ts
 * judges on the reward's components. Calibrated on the flag corpus (docs/benchmarks.md "Flags").
 */
import type { FlagThresholds } from "../config";
import type { Flag, RolloutInput, RuleInput, StepInput } from "../types";
import { fmt, mean, pearson, rolloutIdsAt, stepRange, streaks } from "./shared";

/** Per-rollout correlation of completion length with reward over these rollouts (null: too few or no variance). */
function lengthRewardCorr(rollouts: RolloutInput[]): number | null {
  const ok = rollouts.filter((r) => !r.failed && r.reward !== null && Number.isFinite(r.reward));
  return pearson(ok.map((r) => r.completion_tokens), ok.map((r) => r.reward!));
}

export function lengthDrift({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const measured = steps.filter((s) => s.completion_tokens_mean !== null);
  if (measured.length <= t.baselineSteps) return [];
  const baseline = measured.slice(0, t.baselineSteps);
  const base = mean(baseline.map((s) => s.completion_tokens_mean!))!;
  const baseReward = mean(baseline.flatMap((s) => (s.reward_mean === null ? [] : [s.reward_mean])));
  const later = measured.slice(t.baselineSteps);
  const drift = (x: number) =>
    Math.abs(x - base) >= t.lengthMinDeltaTokens && (x >= base * t.lengthGrowthRatio || x <= base * t.lengthShrinkRatio);
  const baseSteps = new Set(baseline.map((s) => s.step));
  return streaks(later, (s) => drift(s.completion_tokens_mean!)).map((run) => {
    const last = run[run.length - 1]!;
    const now = last.completion_tokens_mean!;
    const grew = now > base;
    const stepNums = run.map((s) => s.step);
    const follows = followsReward(run, grew, baseReward, rollouts.filter((r) => baseSteps.has(r.step) || stepNums.includes(r.step)), t);
    // The longest (or shortest) replies of the latest drifted step show it best.
    const at = rollouts.filter((r) => r.step === last.step).sort((a, b) => (grew ? b.completion_tokens - a.completion_tokens : a.completion_tokens - b.completion_tokens));
    const ids = at.slice(0, 8).map((r) => r.id);
    const moved = `Completion length ${grew ? "grew" : "shrank"} from ${fmt(base, 1)} tokens (first ${t.baselineSteps} steps) to ${fmt(now, 1)} on ${stepRange(run)}`;
    const reward = `the reward ${fmt(baseReward ?? 0, 3)} → ${fmt(last.reward_mean ?? 0, 3)}`;
    return {
      rule: "length_drift",
      severity: follows ? "info" : "warning",
      message: follows
        ? `${moved}, with the reward (${reward}; ${grew ? "longer" : "shorter"} replies score higher): the reward asks for it.`
        : `${moved}, against the reward (${reward}): the reward does not ask for this length.`,
      firstStep: run[0]!.step,
      lastStep: last.step,
      steps: stepNums,
      rolloutIds: ids.length ? ids : rolloutIdsAt(rollouts, stepNums, t),
    } satisfies Flag;
  });
}

/** The length went where the reward pays: the reward rose, and across the baseline and drifted rollouts
 * longer (or shorter, when it shrank) replies scored higher. */
function followsReward(run: StepInput[], grew: boolean, baseReward: number | null, rollouts: RolloutInput[], t: FlagThresholds): boolean {
  const now = mean(run.flatMap((s) => (s.reward_mean === null ? [] : [s.reward_mean])));
  if (baseReward === null || now === null || now - baseReward < t.lengthRewardRise) return false;
  const corr = lengthRewardCorr(rollouts);
  return corr !== null && (grew ? corr : -corr) >= t.lengthRewardCorr;
}
