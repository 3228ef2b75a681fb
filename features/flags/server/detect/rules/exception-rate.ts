/** Exception-rate rise: more rollouts failing (scenario threw, timed out, reward failed) than at the start. */
import type { FlagThresholds } from "../config";
import type { Flag, RuleInput } from "../types";
import { fmt, mean, rolloutIdsAt, stepRange, streaks } from "./shared";

export function exceptionRate({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const base = mean(steps.slice(0, t.baselineSteps).map((s) => s.exception_rate)) ?? 0;
  // A run that fails this often from its first step is flagged too: its baseline is then 0.
  const baseline = (i: number) => (i < t.baselineSteps ? 0 : base);
  return streaks(steps, (s, i) => s.exception_rate >= t.maxExceptionRate && s.exception_rate >= baseline(i) + t.exceptionRise).map((run) => {
    const last = run[run.length - 1]!;
    const stepNums = run.map((s) => s.step);
    return {
      rule: "exception_rate",
      severity: last.exception_rate >= 0.5 ? "critical" : "warning",
      message: `${fmt(last.exception_rate * 100, 0)}% of rollouts failed at step ${last.step} (baseline ${fmt(baseline(steps.indexOf(last)) * 100, 0)}%) on ${stepRange(run)}.`,
      firstStep: run[0]!.step,
      lastStep: last.step,
      steps: stepNums,
      rolloutIds: rolloutIdsAt(rollouts, stepNums, t, (r) => r.failed),
    } satisfies Flag;
  });
}
