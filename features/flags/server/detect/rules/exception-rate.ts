/**
 * Exception-rate rise: more rollouts failing (scenario threw, timed out, reward failed) than at the start.
 * Counts the experiment's failures only: a rollout the runner lost (starved of CPU, its engine connection
 * cut: contracts/run.ts RUNNER_FAULT_ERROR_KINDS) is the runner's, said by runner-faults.ts instead. The flag
 * corpus' healthy runs on a loaded machine lost a quarter of their first step's rollouts that way.
 */
import type { FlagThresholds } from "../config";
import type { Flag, RolloutInput, RuleInput, StepInput } from "../types";
import { fmt, mean, rolloutIdsAt, stepRange, streaks } from "./shared";

/** The step's rate of the experiment's own failures: from its rollouts where they were read, else the step's
 * stored rate less nothing (older steps of a long run; their runner faults are not known here). */
function ownRate(s: StepInput, byStep: Map<number, RolloutInput[]>): number {
  const rs = byStep.get(s.step);
  if (!rs?.length) return s.exception_rate;
  return rs.filter((r) => r.failed && !r.runner_fault).length / rs.length;
}

export function exceptionRate({ steps, rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const byStep = new Map<number, RolloutInput[]>();
  for (const r of rollouts) byStep.set(r.step, [...(byStep.get(r.step) ?? []), r]);
  const rate = new Map(steps.map((s) => [s.step, ownRate(s, byStep)]));
  const base = mean(steps.slice(0, t.baselineSteps).map((s) => rate.get(s.step)!)) ?? 0;
  // A run that fails this often from its first step is flagged too: its baseline is then 0.
  const baseline = (i: number) => (i < t.baselineSteps ? 0 : base);
  return streaks(steps, (s, i) => rate.get(s.step)! >= t.maxExceptionRate && rate.get(s.step)! >= baseline(i) + t.exceptionRise).map((run) => {
    const last = run[run.length - 1]!;
    const lastRate = rate.get(last.step)!;
    const stepNums = run.map((s) => s.step);
    return {
      rule: "exception_rate",
      severity: lastRate >= 0.5 ? "critical" : "warning",
      message: `${fmt(lastRate * 100, 0)}% of rollouts failed at step ${last.step} (baseline ${fmt(baseline(steps.indexOf(last)) * 100, 0)}%) on ${stepRange(run)}.`,
      firstStep: run[0]!.step,
      lastStep: last.step,
      steps: stepNums,
      rolloutIds: rolloutIdsAt(rollouts, stepNums, t, (r) => r.failed && !r.runner_fault),
    } satisfies Flag;
  });
}
