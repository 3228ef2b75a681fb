/**
 * Reward hacking signs: one reward component comes to dominate the reward (nearly all of its variation
 * across rollouts) and keeps rising while another component that used to feed the reward falls — the
 * policy found one lever and is trading the rest away. Healthy learning (every contributing component
 * rising, or a cost component like "words" falling) does not raise it.
 *
 * Judged at each step k with `hackWindow` steps of rollouts before it: the run's first window against the
 * window ending at k. Consecutive steps where it holds are one flag.
 *
 * "Fed the reward" is judged two ways, either suffices: the component correlates with the reward at the
 * start, or a least-squares fit of the reward on all the components at the start gives it a positive weight.
 * The second catches a component the reward pays for that few rollouts reached at first (the flag corpus'
 * length-hack: 0.3·exact + 0.7·length, where the rare exact replies barely correlate with the reward).
 */
import type { FlagThresholds } from "../config";
import type { Flag, RolloutInput, RuleInput } from "../types";
import { fmt, mean, pearson } from "./shared";

interface Finding {
  step: number;
  dominant: string;
  falling: string;
  from: number;
  to: number;
  ids: string[];
}

function judge(base: RolloutInput[], recent: RolloutInput[], t: FlagThresholds): Omit<Finding, "step" | "ids"> | null {
  const keys = [...new Set([...base, ...recent].flatMap((r) => Object.keys(r.metrics)))].filter((k) =>
    [...base, ...recent].every((r) => Number.isFinite(r.metrics[k])),
  );
  if (keys.length < 2) return null;
  const col = (rs: RolloutInput[], k: string) => rs.map((r) => r.metrics[k]!);
  const rewards = (rs: RolloutInput[]) => rs.map((r) => r.reward!);
  const weights = leastSquares(keys.map((k) => col(base, k)), rewards(base));
  const stats = keys.map((k, i) => ({
    k,
    baseMean: mean(col(base, k))!,
    recentMean: mean(col(recent, k))!,
    baseCorr: pearson(col(base, k), rewards(base)),
    recentCorr: pearson(col(recent, k), rewards(recent)),
    paid: weights !== null && weights[i]! > 1e-6,
  }));
  for (const d of stats) {
    if (d.recentCorr === null || d.recentCorr < t.hackDominantCorr || d.recentMean <= d.baseMean) continue;
    for (const o of stats) {
      const fed = (o.baseCorr !== null && o.baseCorr >= t.hackContributorCorr) || o.paid;
      if (o.k === d.k || !fed || o.baseMean <= 0) continue;
      if (o.recentMean <= o.baseMean * (1 - t.hackFallRatio)) return { dominant: d.k, falling: o.k, from: o.baseMean, to: o.recentMean };
    }
  }
  return null;
}

/**
 * Weights w of reward ≈ w0 + Σ w_k·x_k fitted by least squares (normal equations, Gaussian elimination with
 * partial pivoting): null when the components are collinear or too few rollouts. Written here because it is
 * a handful of components, ten lines of algebra, and a numerics library would be a dependency for that alone.
 */
function leastSquares(all: number[][], y: number[]): number[] | null {
  // A component constant over these rollouts (the runner's "turns" of a one-turn scenario) is the intercept
  // again: fitted without it, weight 0.
  const varies = all.map((c) => c.some((v) => Math.abs(v - c[0]!) > 1e-12));
  const xs = all.filter((_, i) => varies[i]);
  const fitted = fit(xs, y);
  if (!fitted) return null;
  let next = 0;
  return varies.map((v) => (v ? fitted[next++]! : 0));
}

function fit(xs: number[][], y: number[]): number[] | null {
  const n = y.length;
  const k = xs.length + 1;
  if (n < k + 2) return null;
  const row = (i: number) => [1, ...xs.map((c) => c[i]!)];
  const a = Array.from({ length: k }, () => new Array<number>(k + 1).fill(0));
  for (let i = 0; i < n; i++) {
    const r = row(i);
    for (let p = 0; p < k; p++) {
      for (let q = 0; q < k; q++) a[p]![q]! += r[p]! * r[q]!;
      a[p]![k]! += r[p]! * y[i]!;
    }
  }
  for (let c = 0; c < k; c++) {
    let piv = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r]![c]!) > Math.abs(a[piv]![c]!)) piv = r;
    if (Math.abs(a[piv]![c]!) < 1e-9 * n) return null;
    [a[c], a[piv]] = [a[piv]!, a[c]!];
    for (let r = 0; r < k; r++) {
      if (r === c) continue;
      const f = a[r]![c]! / a[c]![c]!;
      for (let q = c; q <= k; q++) a[r]![q]! -= f * a[c]![q]!;
    }
  }
  return a.slice(1).map((r, i) => r[k]! / a[i + 1]![i + 1]!);
}

export function rewardHacking({ rollouts }: RuleInput, t: FlagThresholds): Flag[] {
  const usable = rollouts.filter((r) => !r.failed && r.reward !== null && Number.isFinite(r.reward));
  const stepNums = [...new Set(usable.map((r) => r.step))].sort((a, b) => a - b);
  const w = t.hackWindow;
  if (stepNums.length < 2 * w) return [];
  const at = (steps: number[]) => usable.filter((r) => steps.includes(r.step));
  const base = at(stepNums.slice(0, w));
  const findings: Finding[] = [];
  for (let end = 2 * w; end <= stepNums.length; end++) {
    const window = stepNums.slice(end - w, end);
    const recent = at(window);
    const f = judge(base, recent, t);
    if (!f) continue;
    const step = window[window.length - 1]!;
    const top = recent.filter((r) => r.step === step).sort((a, b) => b.metrics[f.dominant]! - a.metrics[f.dominant]!);
    findings.push({ step, ...f, ids: top.slice(0, 8).map((r) => r.id) });
  }
  // Consecutive judged steps with a finding are one flag.
  const flags: Flag[] = [];
  let cur: Finding[] = [];
  const close = () => {
    if (!cur.length) return;
    const last = cur[cur.length - 1]!;
    flags.push({
      rule: "reward_hacking",
      severity: "warning",
      message: `"${last.dominant}" now drives the reward and keeps rising while "${last.falling}" fell from ${fmt(last.from, 3)} to ${fmt(last.to, 3)} (steps ${cur[0]!.step}–${last.step} against the first ${w}): check these rollouts for reward hacking.`,
      firstStep: cur[0]!.step,
      lastStep: last.step,
      steps: cur.map((f) => f.step),
      rolloutIds: last.ids.slice(0, t.maxRolloutIds),
    });
    cur = [];
  };
  for (const f of findings) {
    const prev = cur[cur.length - 1];
    if (prev && stepNums.indexOf(f.step) !== stepNums.indexOf(prev.step) + 1) close();
    cur.push(f);
  }
  close();
  return flags;
}
