/** Helpers the rules share. */
import type { FlagThresholds } from "../config";
import type { RolloutInput, StepInput } from "../types";

/** Maximal runs of adjacent history entries for which `holds` is true, at least `min` long. */
export function streaks(steps: StepInput[], holds: (s: StepInput, i: number) => boolean, min = 1): StepInput[][] {
  const out: StepInput[][] = [];
  let cur: StepInput[] = [];
  steps.forEach((s, i) => {
    if (holds(s, i)) cur.push(s);
    else {
      if (cur.length >= min) out.push(cur);
      cur = [];
    }
  });
  if (cur.length >= min) out.push(cur);
  return out;
}

/** Ids of the rollouts at these steps that pass `keep`, newest step first, capped. */
export function rolloutIdsAt(
  rollouts: RolloutInput[],
  steps: number[],
  t: FlagThresholds,
  keep: (r: RolloutInput) => boolean = () => true,
): string[] {
  const at = new Set(steps);
  return rollouts
    .filter((r) => at.has(r.step) && keep(r))
    .sort((a, b) => b.step - a.step || a.group - b.group)
    .slice(0, t.maxRolloutIds)
    .map((r) => r.id);
}

export const mean = (xs: number[]): number | null => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

export function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Pearson correlation; null when either side has no variance or there are fewer than 3 pairs. */
export function pearson(xs: number[], ys: number[]): number | null {
  const n = Math.min(xs.length, ys.length);
  if (n < 3) return null;
  const mx = mean(xs.slice(0, n))!;
  const my = mean(ys.slice(0, n))!;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - mx;
    const dy = ys[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx < 1e-12 || syy < 1e-12) return null;
  return sxy / Math.sqrt(sxx * syy);
}

export const fmt = (x: number, digits = 2) => (Number.isInteger(x) ? String(x) : x.toFixed(digits));

/** "step 7" or "steps 7–9". */
export const stepRange = (steps: StepInput[]) =>
  steps.length === 1 ? `step ${steps[0]!.step}` : `steps ${steps[0]!.step}–${steps[steps.length - 1]!.step}`;
