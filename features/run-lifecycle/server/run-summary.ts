/**
 * Run.summary: the numbers the runs table shows and sorts by, kept current by ingestion (ingest/projection.ts merges
 * each batch's patch into the stored JSON). The last step's metrics under their own names (reward_mean,
 * exception_rate, tokens_per_s, …, and the trainer's loss, kl, entropy, …), and the last eval's as eval_*
 * (eval_reward is its reward_mean). Only finite numbers are kept: the table sorts summary values as numbers,
 * and a null (a step where every rollout failed) leaves the previous value out rather than sorting it.
 * The summary's reward_mean is the LAST STEP's ("Reward (last step)"); the run's "mean reward" is another
 * number, defined once in contracts/mean-reward.ts.
 */
import type { EvalMetrics, RunEvent, StepMetrics } from "@contracts";

export type RunSummary = Record<string, number>;

const STEP_KEYS = [
  "reward_mean",
  "reward_std_within_group",
  "exception_rate",
  "groups_trainable",
  "rollouts",
  "rollout_s",
  "train_s",
  "step_s",
  "tokens_per_s",
  "judge_tokens",
  "judge_cost_usd",
] as const satisfies readonly (keyof StepMetrics)[];

/** The trainer's numbers a user compares runs by (its own counts are already among the step's). */
const TRAINER_KEYS = ["loss", "grad_norm", "kl", "clip_fraction", "entropy", "trained_tokens"] as const;

const EVAL_KEYS: Record<string, keyof EvalMetrics> = {
  eval_reward: "reward_mean",
  eval_reward_std: "reward_std",
  eval_exception_rate: "exception_rate",
  eval_step: "step",
};

function put(out: RunSummary, key: string, value: unknown): void {
  if (typeof value === "number" && Number.isFinite(value)) out[key] = value;
}

/** What one event changes in the summary ({} for events that change nothing). */
export function summaryPatch(e: RunEvent): RunSummary {
  const out: RunSummary = {};
  if (e.type === "step.finished") {
    for (const k of STEP_KEYS) put(out, k, e.payload[k]);
    put(out, "step", e.payload.step);
    const trainer = e.payload.trainer as Record<string, unknown> | null;
    if (trainer) for (const k of TRAINER_KEYS) put(out, k, trainer[k]);
  } else if (e.type === "eval.finished") {
    for (const [to, from] of Object.entries(EVAL_KEYS)) put(out, to, e.payload[from]);
  }
  return out;
}

