/**
 * The engine's Tinker primitives (POST /tinker/*): what the web server's Tinker door
 * (features/tinker, the `tinker` SDK's training and sampling clients) asks the runner's engine for, through
 * the runner's pass-through. The Python side is gpu-runner/engine/rollbook_engine/contracts/tinker.py;
 * tests/test_tinker_contract.py compares the two field by field.
 *
 * One Tinker model is one Rollbook run: its LoRA trains as the run's `train:<run>` adapter beside other runs'
 * (the engine's tenancy ledger). `forward_backward` adds gradients, `optim_step` applies them (one step of
 * the run), `save` writes the run's checkpoint of the current step (served as `<run>@<step>` like any run's).
 * A datum is Tinker's: `tokens` is the model input; position i predicts `target_tokens[i]`.
 */
import { z } from "zod";
import { CheckpointInfo } from "./train";

const RunId = z.string().min(1).max(200);
const TokenIds = z.array(z.number().int().min(0));

/** The run's adapter, named on every training call (created on the first, checked on the rest). */
const TrainingTarget = z.object({
  run_id: RunId,
  base_model: z.string().min(1).max(400),
  lora_rank: z.number().int().min(1).max(256),
  seed: z.number().int().min(0),
});

export const TINKER_LOSSES = ["cross_entropy", "importance_sampling", "ppo", "cispo"] as const;
export const TinkerLoss = z.enum(TINKER_LOSSES);
export type TinkerLoss = z.infer<typeof TinkerLoss>;

export const TinkerDatum = z.object({
  tokens: TokenIds.min(1).describe("The model input (Tinker's model_input, its text chunks joined)."),
  target_tokens: TokenIds.describe("One per input position: the token that position is trained to predict."),
  weights: z.array(z.number()).optional().describe("cross_entropy: per-position weight (0 masks a position)."),
  logprobs: z.array(z.number()).optional().describe("RL losses: the sampler's logprob of each target token."),
  advantages: z.array(z.number()).optional().describe("RL losses: per-position advantage (0 masks a position)."),
});
export type TinkerDatum = z.infer<typeof TinkerDatum>;

export const TinkerForwardBackwardRequest = TrainingTarget.extend({
  forward_only: z.boolean().describe("true: Tinker's forward (no gradient kept)."),
  loss_fn: TinkerLoss,
  loss_fn_config: z
    .object({ clip_low_threshold: z.number().positive().optional(), clip_high_threshold: z.number().positive().optional() })
    .strict()
    .nullable()
    .optional()
    .describe("ppo / cispo: the ratio's clip range [low, high] (Tinker's defaults 0.8 and 1.2)."),
  data: z.array(TinkerDatum).min(1),
});
export type TinkerForwardBackwardRequest = z.infer<typeof TinkerForwardBackwardRequest>;

export const TinkerForwardBackwardResponse = z.object({
  loss_fn_outputs: z.array(z.object({ logprobs: z.array(z.number()), elementwise_loss: z.array(z.number()) })),
  metrics: z.record(z.string(), z.number()).describe('Tinker\'s names: "loss:sum", and the trainer\'s (entropy, clip fraction).'),
  pending_batches: z.number().int().describe("forward_backward calls whose gradients wait for the next optim_step."),
});
export type TinkerForwardBackwardResponse = z.infer<typeof TinkerForwardBackwardResponse>;

export const TinkerAdamParams = z.object({
  learning_rate: z.number().positive().max(1),
  beta1: z.number().min(0).lt(1),
  beta2: z.number().min(0).lt(1),
  eps: z.number().positive(),
  weight_decay: z.number().min(0),
  grad_clip_norm: z.number().min(0).describe("0: no clipping (Tinker's default)."),
});
export type TinkerAdamParams = z.infer<typeof TinkerAdamParams>;

export const TinkerOptimStepRequest = TrainingTarget.extend({ adam_params: TinkerAdamParams });
export type TinkerOptimStepRequest = z.infer<typeof TinkerOptimStepRequest>;

export const TinkerOptimStepResponse = z.object({
  step: z.number().int().describe("Optimizer steps the run has applied, this one included (its next checkpoint's step)."),
  metrics: z.object({
    grad_norm: z.number(),
    learning_rate: z.number(),
    loss: z.number().describe("Σ of the accumulated batches' loss:sum."),
    trained_tokens: z.number().int(),
    batches: z.number().int(),
    duration_s: z.number(),
  }),
});
export type TinkerOptimStepResponse = z.infer<typeof TinkerOptimStepResponse>;

export const TinkerSaveRequest = TrainingTarget.extend({
  kind: z.enum(["sampler", "state"]).describe("sampler: save_weights_for_sampler; state: save_state (optimizer included either way)."),
});
export type TinkerSaveRequest = z.infer<typeof TinkerSaveRequest>;

export const TinkerSaveResponse = z.object({
  step: z.number().int(),
  checkpoint: CheckpointInfo.nullable()
    .describe("null at step 0: nothing trained yet, the adapter is the base model exactly (LoRA B = 0)."),
});
export type TinkerSaveResponse = z.infer<typeof TinkerSaveResponse>;

export const TinkerLoadRequest = TrainingTarget.extend({
  source_run_id: RunId,
  step: z.number().int().min(1),
  with_optimizer: z.boolean(),
});
export type TinkerLoadRequest = z.infer<typeof TinkerLoadRequest>;

export const TinkerLoadResponse = z.object({ step: z.number().int().describe("The run's step after the load (the source's).") });
export type TinkerLoadResponse = z.infer<typeof TinkerLoadResponse>;

export const TinkerSampleRequest = z.object({
  model: z.string().min(1).max(400).describe('The base model or "<run>@<step>".'),
  prompt_token_ids: TokenIds.min(1),
  num_samples: z.number().int().min(1).max(64),
  max_tokens: z.number().int().min(1),
  temperature: z.number().min(0).max(100),
  top_p: z.number().gt(0).max(1),
  top_k: z.number().int().describe("-1: off (the only value served)."),
  seed: z.number().int().nullable().optional(),
  stop: z.array(z.string().min(1)).default([]),
  stop_token_ids: z.array(z.number().int().min(0)).default([]),
  prompt_logprobs: z.boolean().default(false).describe("Also each prompt token's logprob (the first is null): compute_logprobs."),
  user: z.string().nullable().optional().describe("The engine's fair-share key (the run or caller)."),
});
export type TinkerSampleRequest = z.infer<typeof TinkerSampleRequest>;

/**
 * What the web server sends the runner for a sample whose sequences are rollouts of a run: the sample, and
 * the trajectory ids its sequences become, so the runner records each one's tokens (prompt mask 0, sampled
 * mask 1 with its logprobs) in the run's token log for the token view. The runner passes only `sample` on.
 */
export const TinkerRecordedSampleRequest = TinkerSampleRequest.extend({
  record: z.object({ run_id: RunId, trajectory_ids: z.array(z.string().min(1).max(300)).min(1).max(64) }).optional(),
});
export type TinkerRecordedSampleRequest = z.infer<typeof TinkerRecordedSampleRequest>;

export const TinkerSampleResponse = z.object({
  sequences: z.array(
    z.object({
      tokens: TokenIds,
      logprobs: z.array(z.number()),
      stop_reason: z.enum(["stop", "length"]),
      text: z.string().describe("The tokens decoded (special tokens skipped), for the run page."),
    }),
  ),
  prompt_text: z.string().describe("The prompt decoded (special tokens kept), for the run page."),
  prompt_logprobs: z.array(z.number().nullable()).nullable(),
});
export type TinkerSampleResponse = z.infer<typeof TinkerSampleResponse>;
