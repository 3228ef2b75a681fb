/**
 * Rollouts the runner lost — starved of CPU until their wall clock ran out, or cut from the engine twice —
 * said on the run page (info: the experiment is not at fault, and nothing is alerted). This is where two runs
 * of the same seed can still differ: a rollout that starved on a loaded machine has no reward, so its group
 * trains on fewer samples than on a quiet one (the batch-invariant engine samples the rest identically).
 */
import type { FlagThresholds } from "../config";
import type { Flag, RuleInput } from "../types";
import { rolloutIdsAt } from "./shared";

export function runnerFaults({ rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const lost = rollouts.filter((r) => r.runner_fault);
  if (!lost.length) return [];
  const stepNums = [...new Set(lost.map((r) => r.step))].sort((a, b) => a - b);
  const n = lost.length;
  return [
    {
      rule: "runner_faults",
      severity: "info",
      message:
        `${n} rollout${n === 1 ? "" : "s"} at ${stepNums.length === 1 ? `step ${stepNums[0]}` : `steps ${stepNums.join(", ")}`} ` +
        `${n === 1 ? "was" : "were"} lost to the runner (starved of CPU or cut from the engine), not to your code: a run of the same seed on a quieter machine trains on ${n === 1 ? "it" : "them"} and can differ from here on.`,
      firstStep: stepNums[0]!,
      lastStep: stepNums[stepNums.length - 1]!,
      steps: stepNums,
      rolloutIds: rolloutIdsAt(rollouts, stepNums, t, (r) => r.runner_fault === true),
    },
  ];
}
