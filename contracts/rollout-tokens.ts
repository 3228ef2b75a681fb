/**
 * One rollout's tokens as the token view shows them (runner GET /runs/<run>/rollouts/<id>/tokens, the web's
 * runs.rolloutTokens): each token's decoded text, whether the model sampled it and whether the step trained
 * on it, its sampling logprob and — where the step trained on it — the trainer's first-pass logprob and the
 * importance ratio exp(trainer − sampling), the inference–training mismatch GRPO's ratio corrects for.
 */
import { z } from "zod";
import { TokenRole } from "./chat";

export const RolloutToken = z.object({
  id: z.number().int().min(0),
  /** The piece as the engine's tokenizer decodes it (U+FFFD where it holds part of a UTF-8 character). */
  text: z.string(),
  /** mask = 1: the model sampled it (prompt, template and tool-result tokens are 0). */
  sampled: z.boolean(),
  /** Sampled, its group had reward variance (advantage ≠ 0) and the step trained. */
  trained: z.boolean(),
  /** The sampler's logprob; null for tokens the model did not sample. */
  sampling_logprob: z.number().nullable(),
  /** The trainer's logprob under the policy the step started from; null where the step did not train on it. */
  trainer_logprob: z.number().nullable(),
  /** exp(trainer_logprob − sampling_logprob); null where either is. */
  ratio: z.number().nullable(),
  /**
   * A sampled token's role: "content" (reply text, a tool call's name or arguments) or "scaffolding" (the tool
   * format's markers and call envelope, end of turn; docs/sdk.md). null for prompt tokens, and where the run's
   * token log does not say (recorded before roles were, or a reply sampled elsewhere).
   */
  role: TokenRole.nullable().default(null),
});
export type RolloutToken = z.infer<typeof RolloutToken>;

/**
 * What training did with the rollout: "trained" (its step trained on it, with this advantage),
 * "not_trained" (submitted, but its group's rewards were all equal, so its advantage was 0), or
 * "no_record" (never submitted: an eval or dry-run rollout, a failed one, a group with fewer than 2 valid
 * rollouts, a step still training, or a run from before trainer logprobs were recorded).
 */
export const RolloutTraining = z.object({
  status: z.enum(["trained", "not_trained", "no_record"]),
  step: z.number().int().nullable(),
  /** The advantage the trainer used (its own number, from train-logprobs.jsonl): contracts/signals.ts's `trained`. */
  advantage: z.number().nullable(),
  /**
   * Added by the web server from the stored group (contracts/signals.ts), so the token view labels both as the
   * rollout panel does: reward − group mean, and the run's trainer.scale_rewards.
   */
  raw_advantage: z.number().nullable().optional(),
  scale_rewards: z.boolean().optional(),
});
export type RolloutTraining = z.infer<typeof RolloutTraining>;

export const RolloutTokens = z.object({
  trajectory_id: z.string(),
  training: RolloutTraining,
  /** One entry per token sequence the model saw (usually one; several when a chat template rewrote turns). */
  sequences: z.array(
    z.object({
      tokens: z.array(RolloutToken),
      /**
       * The replies of this sequence were sampled without their token ids (an ART client's trajectory sampled
       * elsewhere) and re-tokenised through the chat template: not necessarily what was sampled, and without
       * sampling logprobs (the trainer used the policy's own).
       */
      retokenized: z.boolean().default(false),
    }),
  ),
});
export type RolloutTokens = z.infer<typeof RolloutTokens>;
