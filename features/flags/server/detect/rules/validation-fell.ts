/**
 * Validation fell from its best: the run's latest checkpoint eval is well below the best an earlier checkpoint
 * reached (both thresholds in config.ts: validationFallAbsolute AND validationFallRatio), so training on has
 * made the model worse and the checkpoint worth keeping is an earlier one. Seen on a multi-turn game trained
 * with the defaults: greedy validation 0.75 at step 4, 0.00 at the last step (every task got the same reply).
 *
 * The best is the earliest checkpoint with the highest reward (as `<run>@best` picks it,
 * features/checkpoints/server/best-checkpoint.ts); the message names it and the alias that serves it. The
 * flag covers the trailing run of evals that stay fallen from that best, so it starts at the first fallen
 * eval and grows while validation stays down; once an eval recovers, nothing new is raised.
 * A plateau (0.875, 0.875, 0.85) or a rise raises nothing; an eval with no reward is not in the input.
 */
import type { FlagThresholds } from "../config";
import type { EvalInput, Flag, RuleInput } from "../types";
import { fmt } from "./shared";

const fell = (best: EvalInput, e: EvalInput, t: FlagThresholds) =>
  best.reward - e.reward >= t.validationFallAbsolute && e.reward <= best.reward * t.validationFallRatio;

export function validationFell({ evals, runNumber }: RuleInput, t: FlagThresholds): Flag[] {
  const series = [...(evals ?? [])].filter((e) => Number.isFinite(e.reward)).sort((a, b) => a.step - b.step);
  let best: EvalInput | null = null;
  let fallen: EvalInput[] = [];
  let fallenFrom: EvalInput | null = null;
  for (const e of series) {
    if (best !== null && fell(best, e, t)) {
      if (fallen.length === 0) fallenFrom = best;
      fallen.push(e);
      continue;
    }
    fallen = [];
    if (best === null || e.reward > best.reward) best = e;
  }
  if (fallen.length === 0 || fallenFrom === null) return [];
  const latest = fallen[fallen.length - 1]!;
  const alias = `${runNumber ?? "<run>"}@best`;
  return [
    {
      rule: "validation_fell",
      severity: "warning",
      message:
        `Validation reward fell from its best: ${fmt(latest.reward, 3)} at step ${latest.step}, against ${fmt(fallenFrom.reward, 3)} at step ${fallenFrom.step}. ` +
        `The step ${fallenFrom.step} checkpoint is the one to keep: chat with it or serve it as model "${alias}".`,
      firstStep: fallen[0]!.step,
      lastStep: latest.step,
      steps: fallen.map((e) => e.step),
      // The latest fallen eval's validation rollouts first: what the model replies now.
      rolloutIds: [...fallen].reverse().flatMap((e) => e.rolloutIds ?? []).slice(0, t.maxRolloutIds),
    },
  ];
}
