/**
 * Every pathology threshold, in one place. Defaults chosen for small GRPO runs (groups of 4–16, a few
 * dozen steps); a workspace override can later be merged over this object (the rules take it as an
 * argument and never read it globally).
 */
export const FLAG_THRESHOLDS = {
  /** Reward collapse: the share of a step's groups that still have reward variance ("trainable")… */
  minTrainableFraction: 0.25,
  /** …at or below minTrainableFraction on this many consecutive steps. 2 flags the default template's
   * "every rollout scores 0.200" failure on the 2nd step of it. Zero trainable groups is critical. */
  collapseSteps: 2,
  /** Converged, not collapsed: the run's best reward is at least this far above its first steps' mean… */
  convergedMinRise: 0.1,
  /** …and at least this share of the tied groups score within this fraction of that best (1.000 ties at 1.000). */
  convergedTopShare: 0.75,
  convergedTopTolerance: 0.02,

  /** Length drift: a step's mean completion length against the mean of the run's first `baselineSteps`. */
  baselineSteps: 2,
  /** Grew to at least this many times the baseline… */
  lengthGrowthRatio: 2,
  /** …or shrank to at most this share of it… */
  lengthShrinkRatio: 0.4,
  /** …and moved by at least this many tokens (tiny replies doubling from 2 to 4 tokens is not drift). */
  lengthMinDeltaTokens: 8,
  /** It moved with the reward (info, not a warning) when the drifted steps' mean reward is at least this
   * above the baseline's, and the per-rollout correlation of length with reward, signed by the direction the
   * length went, is at least this (say-the-word: shorter replies score higher, the replies shrink). */
  lengthRewardRise: 0.05,
  lengthRewardCorr: 0.3,

  /** Reward hacking: compares the mean of the first `hackWindow` steps with the last `hackWindow`. */
  hackWindow: 3,
  /** A component "dominates" when its per-rollout correlation with the reward recently is at least this… */
  hackDominantCorr: 0.9,
  /** …and it rose, while another component that fed the reward (baseline correlation ≥ this)… */
  hackContributorCorr: 0.3,
  /** …fell by at least this share of its baseline mean. */
  hackFallRatio: 0.3,

  /** probs_corr (sampling vs training token probabilities) below this on a step that trained. */
  minProbsCorr: 0.9,

  /** KL blow-up: kl above this absolute value… */
  maxKl: 1,
  /** …or above this many times the median of the earlier steps' kl (when that median is above klFloor). */
  klJumpRatio: 10,
  klFloor: 0.01,

  /** Exception rate: a step at or above this… */
  maxExceptionRate: 0.25,
  /** …and at least this much above the mean of the run's first `baselineSteps`. */
  exceptionRise: 0.15,

  /** The most rollout ids a flag keeps (the UI shows them as one filtered list). */
  maxRolloutIds: 32,

  /** Validation fell from its best (rules/validation-fell.ts): the latest checkpoint eval is at least this far
   * below the best earlier one, absolute… A greedy validation split of 8 tasks (say-the-word's) moves in steps
   * of 0.125, so one task flipping (a healthy run's wobble: 0.875 → 0.75) stays under it and two do not. */
  validationFallAbsolute: 0.2,
  /** …and at or below this share of the best: a run at 0.9 dipping to 0.7 has kept most of what it learned and
   * is not flagged, while the multi-turn game's 0.75 → 0.00 (every task given the same reply) is. */
  validationFallRatio: 0.7,
} as const;

export type FlagThresholds = { -readonly [K in keyof typeof FLAG_THRESHOLDS]: number };
