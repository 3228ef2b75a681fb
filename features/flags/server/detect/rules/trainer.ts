/** Rules on the trainer's own metrics: probs_corr, KL and a non-finite loss. Skipped steps (no update) are ignored. */
import type { FlagThresholds } from "../config";
import type { Flag, RuleInput, StepInput } from "../types";
import { fmt, median, stepRange, streaks } from "./shared";

const trained = (s: StepInput) => s.trainer !== null && !s.trainer.skipped;

function flag(rule: Flag["rule"], severity: Flag["severity"], run: StepInput[], message: string): Flag {
  return { rule, severity, message, firstStep: run[0]!.step, lastStep: run[run.length - 1]!.step, steps: run.map((s) => s.step), rolloutIds: [] };
}

/** Sampling and training disagree on token probabilities: the engine and trainer are not scoring the same policy. */
export function lowProbsCorr({ steps }: RuleInput, t: FlagThresholds): Flag[] {
  return streaks(steps, (s) => trained(s) && s.trainer!.probs_corr !== null && Number.isFinite(s.trainer!.probs_corr) && s.trainer!.probs_corr < t.minProbsCorr).map((run) => {
    const worst = Math.min(...run.map((s) => s.trainer!.probs_corr!));
    return flag("low_probs_corr", worst < t.minProbsCorr / 2 ? "critical" : "warning", run, `probs_corr fell to ${fmt(worst, 3)} (below ${t.minProbsCorr}) on ${stepRange(run)}: sampling and training probabilities disagree.`);
  });
}

export function klBlowup({ steps }: RuleInput, t: FlagThresholds): Flag[] {
  const kls = steps.map((s) => (trained(s) && s.trainer!.kl !== null && Number.isFinite(s.trainer!.kl) ? s.trainer!.kl : null));
  return streaks(steps, (_s, i) => {
    const kl = kls[i];
    if (kl === null || kl === undefined) return false;
    if (kl > t.maxKl) return true;
    const prior = median(kls.slice(0, i).filter((k): k is number => k !== null));
    return prior !== null && prior > t.klFloor && kl > prior * t.klJumpRatio;
  }).map((run) => {
    const worst = Math.max(...run.map((s) => s.trainer!.kl!));
    return flag("kl_blowup", worst > t.maxKl ? "critical" : "warning", run, `KL blew up to ${fmt(worst, 3)} on ${stepRange(run)} (limit ${t.maxKl}, or ${t.klJumpRatio}× the run's median).`);
  });
}

export function nonfiniteLoss({ steps }: RuleInput): Flag[] {
  const bad = (x: number | null) => x === null || !Number.isFinite(x);
  return streaks(steps, (s) => trained(s) && (bad(s.trainer!.loss) || bad(s.trainer!.grad_norm))).map((run) =>
    flag("nonfinite_loss", "critical", run, `The loss or gradient norm is NaN/Inf on ${stepRange(run)}: the adapter's weights are no longer trustworthy.`),
  );
}
