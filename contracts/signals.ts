/**
 * One number, one definition: the loss, KL and advantages every page, table and export shows, defined here
 * once and imported by each (the live step line, the charts, the steps in runs.get, the rollout and group
 * panels, the token view, the CSV/JSONL exports). Issue 31 found them disagreeing: the live line showed a
 * micro-batch's own loss (0.430) where the chart showed the step's (≈1e-6, a GRPO loss at ratio 1 is the mean
 * of advantages that sum to 0), and the rollout panel showed reward − group mean where the token view showed
 * the scaled advantage the trainer used.
 */
import { groupTraining } from "./advantages";
import type { StepMetrics } from "./run";

/** Labels and their definitions (tooltips), the same words everywhere a value is shown. */
export const SIGNALS = {
  loss: {
    label: "loss",
    definition:
      "the training step's loss (trainer.loss): Σ over the step's trained tokens of weight × GRPO per-token loss, each rollout weighing the same, averaged over mini-epochs. At the step's start the ratio is 1, so it is −mean(advantage) ≈ 0: it is not a curve that should fall.",
  },
  kl: {
    label: "KL",
    definition: "mean k3 KL(policy ‖ base model) per trained token (trainer.kl); measured only when trainer.beta > 0, else 0.",
  },
  advantage: { label: "advantage (reward − group mean)", definition: "the rollout's reward minus the mean reward of its group's submitted rollouts" },
  trainedAdvantage: {
    label: "trained advantage",
    definition: "the advantage the trainer used: (reward − group mean) / (group std + 1e-6) with trainer.scale_rewards (GRPO), reward − group mean without (Dr. GRPO); 0 when the group's rewards are all equal",
  },
} as const;

/** The label of the trained advantage for a run's trainer.scale_rewards. */
export const trainedAdvantageLabel = (scaleRewards: boolean) => `trained advantage (${scaleRewards ? "scaled" : "unscaled"})`;

/** The step's loss, as charted and exported (null: the step did not train, e.g. a dry run). */
export const stepLoss = (m: Pick<StepMetrics, "trainer">): number | null => m.trainer?.loss ?? null;
/** The step's KL, as charted and exported. */
export const stepKl = (m: Pick<StepMetrics, "trainer">): number | null => m.trainer?.kl ?? null;

/** The newest step that trained, with its loss and KL: what the run header's live line shows. */
export function latestTrainedStep(steps: readonly StepMetrics[]): { step: number; loss: number; kl: number } | null {
  for (let i = steps.length - 1; i >= 0; i--) {
    const s = steps[i]!;
    const loss = stepLoss(s);
    if (loss !== null) return { step: s.step, loss, kl: stepKl(s) ?? 0 };
  }
  return null;
}

/** What advantages need of a rollout (a Trajectory, its summary, or a stored row). */
export interface AdvantageRollout {
  id: string;
  split: "train" | "val";
  reward: number | null;
  error: unknown;
  tokens: { prompt?: number | null; completion?: number | null } | null;
}

/**
 * The rollout reached the trainer: the loop submits a rollout with a training sample (it did not fail, was
 * scored, and made a model call: gpu-runner/src/rollout/execute.ts) of a train group.
 */
export function submittedForTraining(r: AdvantageRollout): boolean {
  const tokens = r.tokens ?? {};
  const madeModelCall = (tokens.prompt ?? 0) > 0 || (tokens.completion ?? 0) > 0;
  return r.split === "train" && r.error === null && r.reward !== null && Number.isFinite(r.reward) && madeModelCall;
}

export interface RolloutAdvantage {
  /** reward − mean of the group's submitted rewards; null when the rollout was not submitted (or its group had < 2). */
  raw: number | null;
  /** What the trainer multiplied its tokens by (the trainer's own arithmetic, contracts/advantages.ts); 0 when dropped. */
  trained: number | null;
}

/** Both advantages of every rollout of one group (all rollouts of one train step, group index). */
export function groupRolloutAdvantages(group: readonly AdvantageRollout[], scaleRewards: boolean): Map<string, RolloutAdvantage> {
  const members = group.map((r) => ({ reward: r.reward, hasSample: submittedForTraining(r) }));
  const trained = groupTraining(members, scaleRewards);
  const submitted = members.filter((m) => m.hasSample);
  const mean = submitted.length >= 2 ? submitted.reduce((a, m) => a + (m.reward as number), 0) / submitted.length : null;
  const out = new Map<string, RolloutAdvantage>();
  group.forEach((r, i) => {
    if (mean === null || !members[i]!.hasSample) return out.set(r.id, { raw: null, trained: null });
    // groupTraining nulls a 0 advantage (the trainer drops it, or the whole group when its rewards tie):
    // shown as 0, which is what it contributed.
    out.set(r.id, { raw: (r.reward as number) - mean, trained: trained.advantages[i] ?? 0 });
  });
  return out;
}

/** Key of a rollout's GRPO group: its split, step and group index. */
export const advantageGroupKey = (r: { split: string; step: number; group: number }) => `${r.split}|${r.step}|${r.group}`;

/** Both advantages of every rollout of a run (any order), grouped by advantageGroupKey. */
export function runRolloutAdvantages<T extends AdvantageRollout & { step: number; group: number }>(
  rollouts: readonly T[],
  scaleRewards: boolean,
): Map<string, RolloutAdvantage> {
  const groups = new Map<string, T[]>();
  for (const r of rollouts) {
    const k = advantageGroupKey(r);
    const g = groups.get(k);
    if (g) g.push(r);
    else groups.set(k, [r]);
  }
  const out = new Map<string, RolloutAdvantage>();
  for (const g of groups.values()) for (const [id, a] of groupRolloutAdvantages(g, scaleRewards)) out.set(id, a);
  return out;
}

/**
 * A rollout as exported (the run page's Export JSONL, the server's trajectories JSONL): with both advantages
 * under the names the panel's labels stand for — `advantage` (reward − group mean), `trained_advantage`.
 */
export function withAdvantages<T extends object>(t: T, a: RolloutAdvantage): T & { advantage: number | null; trained_advantage: number | null } {
  return { ...t, advantage: a.raw, trained_advantage: a.trained };
}
