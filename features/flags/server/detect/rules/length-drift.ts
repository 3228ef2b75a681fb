/** Length drift: completions growing (or shrinking) far from where the run started. */
import type { FlagThresholds } from "../config";
import type { Flag, RuleInput } from "../types";
import { fmt, mean, rolloutIdsAt, stepRange, streaks } from "./shared";

export function lengthDrift({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const measured = steps.filter((s) => s.completion_tokens_mean !== null);
  if (measured.length <= t.baselineSteps) return [];
  const base = mean(measured.slice(0, t.baselineSteps).map((s) => s.completion_tokens_mean!))!;
  const later = measured.slice(t.baselineSteps);
  const drift = (x: number) =>
    Math.abs(x - base) >= t.lengthMinDeltaTokens && (x >= base * t.lengthGrowthRatio || x <= base * t.lengthShrinkRatio);
  return streaks(later, (s) => drift(s.completion_tokens_mean!)).map((run) => {
    const last = run[run.length - 1]!;
    const now = last.completion_tokens_mean!;
    const grew = now > base;
    const stepNums = run.map((s) => s.step);
    // The longest (or shortest) replies of the latest drifted step show it best.
    const at = rollouts.filter((r) => r.step === last.step).sort((a, b) => (grew ? b.completion_tokens - a.completion_tokens : a.completion_tokens - b.completion_tokens));
    const ids = at.slice(0, 8).map((r) => r.id);
    return {
      rule: "length_drift",
      severity: "warning",
      message: `Completion length ${grew ? "grew" : "shrank"} from ${fmt(base, 1)} tokens (first ${t.baselineSteps} steps) to ${fmt(now, 1)} on ${stepRange(run)}.`,
      firstStep: run[0]!.step,
      lastStep: last.step,
      steps: stepNums,
      rolloutIds: ids.length ? ids : rolloutIdsAt(rollouts, stepNums, t),
    } satisfies Flag;
  });
}
