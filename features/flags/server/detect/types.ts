/**
 * What the pathology rules read and what they raise. Pure data: the rules never touch the database, so
 * each can be unit-tested on fixtures (rules.test.ts); features/flags/server/detect/store.ts builds these from
 * the Step and Trajectory rows and stores what they return as RunFlag rows.
 */

/** One finished training step: its StepMetrics as stored, plus aggregates over its train rollouts. */
export interface StepInput {
  step: number;
  reward_mean: number | null;
  reward_std_within_group: number | null;
  exception_rate: number;
  groups_trainable: number;
  /** Groups sampled this step (distinct train groups among its rollouts, else the config's groups_per_step). */
  groups: number;
  /** Mean completion tokens of the step's train rollouts (null: none stored). */
  completion_tokens_mean: number | null;
  trainer: {
    loss: number | null;
    grad_norm: number | null;
    kl: number | null;
    probs_corr: number | null;
    skipped: boolean;
  } | null;
}

/** One train rollout, the fields the rules need. */
export interface RolloutInput {
  id: string;
  step: number;
  group: number;
  reward: number | null;
  /** Reward components and ctx.metric values. */
  metrics: Record<string, number>;
  completion_tokens: number;
  failed: boolean;
  /** Failed for the runner's reason (contracts/run.ts RUNNER_FAULT_ERROR_KINDS: starved, engine_connection), not
   * the experiment's: not counted as the experiment's exceptions; said by the runner_faults flag. */
  runner_fault?: boolean;
}

export const FLAG_RULES = [
  "reward_collapse",
  "converged",
  "length_drift",
  "reward_hacking",
  "low_probs_corr",
  "kl_blowup",
  "nonfinite_loss",
  "exception_rate",
  "runner_faults",
  "stalled",
  "validation_fell",
] as const;
export type FlagRule = (typeof FLAG_RULES)[number];
/**
 * "info": worth knowing, not a problem (a run that converged, length that moves with the reward): shown on
 * the run page, never alerted. "warning" and "critical" are problems: alerted to the workspace.
 */
export const FLAG_SEVERITIES = ["info", "warning", "critical"] as const;
export type FlagSeverity = (typeof FLAG_SEVERITIES)[number];

/** The worse of two severities (a stored flag extended by a new evaluation keeps the worst it reached). */
export const worseSeverity = (a: FlagSeverity, b: FlagSeverity): FlagSeverity =>
  FLAG_SEVERITIES.indexOf(a) >= FLAG_SEVERITIES.indexOf(b) ? a : b;

/** A raised flag. (rule, firstStep) identifies it: re-evaluating the same history raises the same flags. */
export interface Flag {
  rule: FlagRule;
  severity: FlagSeverity;
  message: string;
  firstStep: number;
  lastStep: number;
  /** Every step that met the rule's condition (the UI links each). */
  steps: number[];
  /** The rollouts that show it, at most FLAG_THRESHOLDS.maxRolloutIds. */
  rolloutIds: string[];
}

/** The run's validation eval of one of its checkpoints (the eval at step s scores checkpoint s). */
export interface EvalInput {
  step: number;
  /** Mean validation reward. */
  reward: number;
  /** The eval's validation rollouts (read for the most recent evals only), linked by the flag. */
  rolloutIds?: string[];
}

export interface RuleInput {
  /** Finished steps, ascending by step. */
  steps: StepInput[];
  /** Train rollouts of (at least) the most recent steps; rules link only what is here. */
  rollouts: RolloutInput[];
  /** Validation evals of the checkpoints the run still has, any order (absent: none read). */
  evals?: EvalInput[];
  /** The run's number in its workspace, for messages that name `<run>@best` (absent: "<run>"). */
  runNumber?: number;
}
