/**
 * The runner's `externalTrain` call: one GRPO step over rollouts sampled outside the runner's own loop (an
 * OpenPipe ART client's trajectories: features/art/server/art-training-jobs.ts). The web server sends each
 * trajectory as the conversation the client kept (messages, and the replies it sampled with their token ids
 * and logprobs when it has them); the runner rebuilds the token sequences (gpu-runner/src/loop/external-
 * samples.ts): every prompt rendered by the engine exactly as it rendered it for sampling (its /tokenize),
 * every sampled reply as the ids that were sampled. A reply without ids (sampled elsewhere) is re-tokenised
 * through the chat template and marked so (TokenSequence.recomputed_logprobs). Progress streams back as
 * ExternalTrainLine.
 */
import { z } from "zod";
import { ChatMessage, ToolSpec } from "./chat";
import { TrainerConfig } from "./config";
import { CheckpointInfo, TrainMetrics } from "./train";

/** A reply the client sampled: the assistant message, and the exact ids and logprobs when it has them. */
export const ExternalSampledReply = z.object({
  message: ChatMessage,
  token_ids: z.array(z.number().int().min(0)).nullable(),
  logprobs: z.array(z.number()).nullable(),
});
export type ExternalSampledReply = z.infer<typeof ExternalSampledReply>;

export const ExternalItem = z.union([z.object({ message: ChatMessage }), z.object({ sampled: ExternalSampledReply })]);
export type ExternalItem = z.infer<typeof ExternalItem>;

/** One conversation of a rollout (ART's messages_and_choices, or one of its additional_histories). */
export const ExternalHistory = z.object({
  tools: z.array(ToolSpec).nullable(),
  items: z.array(ExternalItem),
});
export type ExternalHistory = z.infer<typeof ExternalHistory>;

export const ExternalTrajectory = z.object({
  /** The rollout's id in the run's history (its tokens are kept under it for the token view). */
  id: z.string().min(1).max(300),
  reward: z.number().finite(),
  histories: z.array(ExternalHistory).min(1),
});
export type ExternalTrajectory = z.infer<typeof ExternalTrajectory>;

export const ExternalTrainRequest = z.object({
  run_id: z.string().min(1),
  /** The run's workspace, recorded on the runner (run-owner.ts) so its checkpoints serve only that workspace. */
  workspace_id: z.string().min(1),
  /** The step trained; the engine's newest checkpoint of the run must be step − 1. */
  step: z.number().int().min(1),
  base_model: z.string().min(1),
  seed: z.number().int().default(0),
  config: TrainerConfig,
  groups: z.array(z.object({ trajectories: z.array(ExternalTrajectory) })),
  /** ART's precalculate_logprobs: train every sequence on the policy's own logprobs, not the sampler's. */
  recompute_logprobs: z.boolean().default(false),
});
export type ExternalTrainRequest = z.infer<typeof ExternalTrainRequest>;

/** A trajectory that was not trained, and why (no sampled reply, a group of fewer than 2, …). */
export const ExternalSkipped = z.object({ id: z.string(), reason: z.string() });

export const ExternalTrainLine = z.discriminatedUnion("type", [
  /** The sequences are built: what the step trains on. */
  z.object({
    type: z.literal("prepared"),
    num_sequences: z.number().int(),
    trajectories: z.number().int(),
    /** Replies trained on the ids that were sampled / re-tokenised through the chat template. */
    exact_replies: z.number().int(),
    retokenized_replies: z.number().int(),
    /**
     * Of the exact replies, those whose prompt is the one the engine recorded feeding the model when it sampled
     * them (a tool_choice-forced call: its prefill is prompt, and the messages sent back do not say so). 0 from
     * a runner that predates it.
     */
    served_prompt_replies: z.number().int().default(0),
    skipped: z.array(ExternalSkipped),
    /**
     * Per trajectory id: each sampled reply's prompt length in tokens (the engine's /tokenize of the messages
     * before it), in reply order across its histories — the rollouts' prompt counts, which ART does not send.
     * Empty from a runner that predates it.
     */
    prompt_tokens: z.record(z.string(), z.array(z.number().int().min(0))).default({}),
  }),
  z.object({ type: z.literal("progress"), micro_batch: z.number().int(), micro_batches: z.number().int(), loss: z.number() }),
  /** metrics null: the engine had saved the checkpoint before a restart cut the stream (its numbers are lost). */
  z.object({ type: z.literal("result"), metrics: TrainMetrics.nullable(), checkpoint: CheckpointInfo }),
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type ExternalTrainLine = z.infer<typeof ExternalTrainLine>;
