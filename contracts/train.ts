/**
 * The engine's /train contract: one GRPO step over groups of token-level samples. The runner builds each
 * sample from the exact token ids the engine sampled (see gpu-runner/src/training-sample.ts), so the
 * trainer never re-tokenises model output. Progress streams back as JSON lines (TrainStreamLine).
 */
import { z } from "zod";
import { TrainerConfig } from "./config";

/**
 * One contiguous token sequence the model saw. `mask[i] = 1` where token i was sampled by the model (it is
 * trained on); 0 for prompt, template and tool-result tokens. `logprobs[i]` is the sampling logprob where
 * mask is 1, and 0 elsewhere. A rollout is usually one sequence; it is several when a chat template
 * rewrote earlier turns, so a later prompt did not extend the earlier tokens.
 */
export const TokenSequence = z
  .object({
    tokens: z.array(z.number().int().min(0)).min(1),
    mask: z.array(z.union([z.literal(0), z.literal(1)])),
    logprobs: z.array(z.number()),
    recomputed_logprobs: z
      .boolean()
      .optional()
      .describe(
        "true: the sampling logprobs are unknown (a reply sampled elsewhere and re-tokenised), `logprobs` is all 0, " +
          "and the trainer takes the current policy's logprobs as the old ones: ratio 1, an on-policy " +
          "policy-gradient step, as OpenPipe ART does for a trajectory without logprobs. Absent: false.",
      ),
    scaffolding: z
      .array(z.union([z.literal(0), z.literal(1)]))
      .optional()
      .describe(
        "1 where a sampled token was its tool format's scaffolding (a call's markers and envelope, the end of turn: the " +
          "engine's token_roles), 0 for content and prompt tokens. Absent where unknown (logs from before it, replies " +
          "sampled elsewhere). For the token view; the trainer ignores it.",
      ),
  })
  .superRefine((s, ctx) => {
    if (s.mask.length !== s.tokens.length || s.logprobs.length !== s.tokens.length) {
      ctx.addIssue({ code: "custom", message: "tokens, mask and logprobs must have the same length" });
    }
    if (s.scaffolding !== undefined && s.scaffolding.length !== s.tokens.length) {
      ctx.addIssue({ code: "custom", path: ["scaffolding"], message: "scaffolding must have one entry per token" });
    }
    const sampled = s.recomputed_logprobs ? s.logprobs.findIndex((l) => l !== 0) : -1;
    if (sampled >= 0) {
      ctx.addIssue({
        code: "custom",
        path: ["logprobs", sampled],
        message: "must be 0 with recomputed_logprobs: true (the trainer computes them)",
      });
    }
  });
export type TokenSequence = z.infer<typeof TokenSequence>;

export const TrainSample = z.object({
  trajectory_id: z.string(),
  reward: z.number().finite(),
  sequences: z.array(TokenSequence).min(1),
});
export type TrainSample = z.infer<typeof TrainSample>;

export const TrainGroup = z.object({ samples: z.array(TrainSample).min(1) });
export type TrainGroup = z.infer<typeof TrainGroup>;

/**
 * Where a forked run's adapter starts: another run's checkpoint on the same engine. Only the new run's first
 * step reads it (afterwards the run continues from its own checkpoints). A fork is a new run, so by default it
 * takes the parent's adapter weights only; `load_optimizer` also restores AdamW's moments (what a resume of
 * the same run always does).
 */
export const InitFrom = z.object({
  run_id: z.string().min(1).describe("The parent run whose checkpoint the adapter starts from."),
  step: z.number().int().min(1).describe("The parent's checkpoint step."),
  load_optimizer: z.boolean().default(false).describe("Also restore the parent's optimizer state (default: adapter weights only)."),
});
export type InitFrom = z.infer<typeof InitFrom>;

export const TrainRequest = z.object({
  run_id: z.string().min(1),
  /** The step being trained; its checkpoint is saved as checkpoints/<step:04d>. Must be newest + 1. */
  step: z.number().int().min(1),
  base_model: z.string().min(1),
  seed: z.number().int().default(0),
  config: TrainerConfig,
  groups: z.array(TrainGroup),
  /** A fork: the adapter starts from this checkpoint (read only while the run has no checkpoint of its own). */
  init_from: InitFrom.optional(),
});
export type TrainRequest = z.infer<typeof TrainRequest>;

export const TrainMetrics = z.object({
  loss: z.number(),
  grad_norm: z.number(),
  kl: z.number(),
  clip_fraction: z.number(),
  entropy: z.number(),
  probs_corr: z.number(),
  trained_tokens: z.number().int(),
  groups_submitted: z.number().int(),
  groups_trainable: z.number().int(),
  /** true when no group had reward variance: no optimiser update was made (the checkpoint still advances). */
  skipped: z.boolean(),
  duration_s: z.number(),
  /** Of duration_s, the seconds spent writing the checkpoint (older engines do not report it). */
  checkpoint_s: z.number().optional(),
});
export type TrainMetrics = z.infer<typeof TrainMetrics>;

export const CheckpointInfo = z.object({
  step: z.number().int(),
  path: z.string(),
  size_bytes: z.number().int(),
});
export type CheckpointInfo = z.infer<typeof CheckpointInfo>;

/**
 * What one step trained on one sample: its advantage and, per sequence of the sample (request order), the
 * trainer's logprob of each mask=1 token in order, from the first forward pass (the policy before the update:
 * the logprobs the importance ratio and probs_corr use). A sequence with no masked token: [].
 */
export const TrainedTokens = z.object({
  advantage: z.number(),
  sequences: z.array(z.array(z.number())),
});
export type TrainedTokens = z.infer<typeof TrainedTokens>;

export const TrainStreamLine = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("progress"),
    micro_batch: z.number().int(),
    micro_batches: z.number().int(),
    loss: z.number(),
  }),
  z.object({
    type: z.literal("result"),
    metrics: TrainMetrics,
    checkpoint: CheckpointInfo,
    /** Keyed by trajectory_id; only samples that trained (a zero-variance group's samples are absent). */
    token_logprobs: z.record(z.string(), TrainedTokens).default({}),
  }),
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type TrainStreamLine = z.infer<typeof TrainStreamLine>;
