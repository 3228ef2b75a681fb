/**
 * The pathology rule set: every rule over a run's step history, after each ingested step.finished
 * (features/flags/server/detect/store.ts). Stalled runs are flagged by the alerts watcher instead: that rule
 * needs a clock, not a history.
 */
import { FLAG_THRESHOLDS, type FlagThresholds } from "./config";
import { exceptionRate } from "./rules/exception-rate";
import { lengthDrift } from "./rules/length-drift";
import { rewardCollapse } from "./rules/reward-collapse";
import { rewardHacking } from "./rules/reward-hacking";
import { runnerFaults } from "./rules/runner-faults";
import { klBlowup, lowProbsCorr, nonfiniteLoss } from "./rules/trainer";
import { validationFell } from "./rules/validation-fell";
import type { Flag, RuleInput } from "./types";

export const RULES: ((input: RuleInput, t: FlagThresholds) => Flag[])[] = [
  rewardCollapse,
  lengthDrift,
  rewardHacking,
  lowProbsCorr,
  klBlowup,
  nonfiniteLoss,
  exceptionRate,
  runnerFaults,
  validationFell,
];

export function evaluateFlags(input: RuleInput, thresholds: FlagThresholds = FLAG_THRESHOLDS): Flag[] {
  const steps = [...input.steps].sort((a, b) => a.step - b.step);
  return RULES.flatMap((rule) => rule({ ...input, steps }, thresholds));
}
