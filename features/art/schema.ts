/**
 * The request bodies OpenPipe ART's client sends (openpipe-art 0.5.x, `art/serverless/client.py`), as zod
 * shapes, and what Rollbook keeps of an ART model on its run. Browser-safe (the run page reads ArtClientInfo).
 *
 * Trajectories arrive as ART serialises them (`TrajectoryGroup.model_dump(mode="json")`): each item of
 * `messages_and_choices` is either an OpenAI chat message dict (prompt, tool results) or an OpenAI `Choice`
 * dict (a sampled reply: `{finish_reason, index, logprobs, message}`). Unknown keys are kept, not refused:
 * newer clients and OpenAI SDKs add fields. Every list and text is bounded (the body itself is capped at
 * MAX_ART_REQUEST_BYTES, server/http/body-limit.ts).
 */
import { z } from "zod";
import { TrainerConfig } from "@contracts";
import { oneLine } from "@contracts/text-rules";

export const ART_LIMITS = {
  groups: 1_024,
  trajectoriesPerGroup: 512,
  itemsPerTrajectory: 2_000,
  histories: 64,
  textChars: 1_000_000,
  toolCalls: 128,
  logprobTokens: 65_536,
  topLogprobs: 20,
  mapEntries: 256,
  logLines: 2_000,
  nameChars: 128,
  /** Rewards and metric values: finite and at most this in size, so a step's sums and variances stay finite. */
  magnitude: 1e12,
  /** A sampled token's logprob: at least this (vLLM writes -9999 for an impossible token), at most 1 (rounding above 0). */
  minLogprob: -1e5,
} as const;

const L = ART_LIMITS;
const text = z.string().max(L.textChars);
/** A name-like field (a key, an id, a tool's name): one line of plain text (contracts/text-rules.ts). */
const line = (max: number) => oneLine(z.string().max(max));
/** A reward or a metric: zod already refuses NaN and ±Infinity; the bound keeps 1e308s from overflowing a step's mean. */
const Finite = z.number().min(-L.magnitude).max(L.magnitude);
const Logprob = z.number().min(L.minLogprob).max(1);
/** ART's metric values: float | int | bool (a bool counts as 0/1 where Rollbook keeps numbers). */
const MetricMap = z.record(line(L.nameChars), z.union([Finite, z.boolean()])).refine((m) => Object.keys(m).length <= L.mapEntries, {
  message: `at most ${L.mapEntries} entries`,
});
const MetadataMap = z
  .record(line(L.nameChars), z.union([Finite, z.string().max(10_000), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= L.mapEntries, { message: `at most ${L.mapEntries} entries` });

export const ArtToolCall = z.looseObject({
  id: line(L.nameChars * 4),
  type: line(32).optional(),
  function: z.looseObject({ name: line(L.nameChars * 4), arguments: text }),
});

/** A content part of an OpenAI message (`{type: "text", text}`; images and audio are kept as their type only). */
const ContentPart = z.looseObject({ type: z.string().max(64), text: text.optional() });
const MessageContent = z.union([text, z.array(ContentPart).max(1_000), z.null()]);

/** An OpenAI chat message dict (ChatCompletionMessageParam). */
export const ArtMessage = z.looseObject({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: MessageContent.optional(),
  name: line(L.nameChars * 4).optional(),
  tool_calls: z.array(ArtToolCall).max(L.toolCalls).nullable().optional(),
  tool_call_id: line(L.nameChars * 4).optional(),
});
export type ArtMessage = z.infer<typeof ArtMessage>;

const TopLogprob = z.looseObject({ token: text, logprob: Logprob, bytes: z.array(z.number().int()).max(1_024).nullable().optional() });
export const ArtTokenLogprob = TopLogprob.extend({ top_logprobs: z.array(TopLogprob).max(L.topLogprobs).nullable().optional() });

/** An OpenAI `Choice` dict: one sampled reply (the trainable part of a trajectory). */
export const ArtChoice = z.looseObject({
  finish_reason: line(64).nullable(),
  index: z.number().int().min(0),
  logprobs: z.looseObject({ content: z.array(ArtTokenLogprob).max(L.logprobTokens).nullable().optional() }).nullable().optional(),
  message: z.looseObject({
    role: z.literal("assistant"),
    content: text.nullable().optional(),
    tool_calls: z.array(ArtToolCall).max(L.toolCalls).nullable().optional(),
  }),
});
export type ArtChoice = z.infer<typeof ArtChoice>;

/** A Choice has `message` and `index`; anything else is a message dict (ART's own test: isinstance Choice). */
export function isChoiceLike(v: unknown): boolean {
  return typeof v === "object" && v !== null && "message" in v && "index" in v;
}

/**
 * One item of messages_and_choices, checked as the shape it claims to be, so an error names the field of
 * that shape (`…messages_and_choices[3].message.role: …`) instead of "matches neither".
 */
export const ArtMessageOrChoice = z.unknown().transform((v, ctx): ArtMessage | ArtChoice => {
  const res = isChoiceLike(v) ? ArtChoice.safeParse(v) : ArtMessage.safeParse(v);
  if (res.success) return res.data;
  for (const issue of res.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path, input: v });
  return z.NEVER;
});

export const ArtHistory = z.looseObject({
  messages_and_choices: z.array(ArtMessageOrChoice).max(L.itemsPerTrajectory),
  tools: z.array(z.unknown()).max(1_000).nullable().optional(),
});

export const ArtTrajectory = z.looseObject({
  messages_and_choices: z.array(ArtMessageOrChoice).max(L.itemsPerTrajectory).default([]),
  tools: z.array(z.unknown()).max(1_000).nullable().optional(),
  additional_histories: z.array(ArtHistory).max(L.histories).default([]),
  reward: Finite.default(0),
  initial_policy_version: z.number().int().nullable().optional(),
  final_policy_version: z.number().int().nullable().optional(),
  metrics: MetricMap.default({}),
  metadata: MetadataMap.default({}),
  logs: z.array(text).max(L.logLines).default([]),
});
export type ArtTrajectory = z.infer<typeof ArtTrajectory>;

const ArtException = z.looseObject({ type: z.string().max(1_000), message: text, traceback: text.optional() });

export const ArtTrajectoryGroup = z.looseObject({
  trajectories: z.array(ArtTrajectory).max(L.trajectoriesPerGroup),
  exceptions: z.array(ArtException).max(L.trajectoriesPerGroup).default([]),
  metadata: MetadataMap.default({}),
  metrics: MetricMap.default({}),
  logs: z.array(text).max(L.logLines).default([]),
});
export type ArtTrajectoryGroup = z.infer<typeof ArtTrajectoryGroup>;

const Name = oneLine(z.string().trim().min(1).max(L.nameChars));
const ModelId = oneLine(z.string().min(1).max(200));

/** POST /preview/models. `entity` and `project` may be null (the client sends its model's, which may be unset). */
export const CreateModelBody = z.object({
  entity: Name.nullable().optional(),
  project: Name.nullable().optional(),
  name: Name.nullable().optional(),
  base_model: oneLine(z.string().trim().min(1).max(300)),
  return_existing: z.boolean().default(false),
});
export type CreateModelBody = z.infer<typeof CreateModelBody>;

/** POST /preview/models/{id}/log. */
export const LogBody = z.object({
  model_id: ModelId.optional(),
  trajectory_groups: z.array(ArtTrajectoryGroup).min(1).max(L.groups),
  split: z.enum(["train", "val"]),
});
export type LogBody = z.infer<typeof LogBody>;

/** A trainer number as ART may send it: within TrainerConfig's own bounds (contracts/config.ts documents them), or null. */
const trainerNumber = (key: "learning_rate" | "epsilon" | "epsilon_high") => TrainerConfig.shape[key].unwrap().nullable().optional();

/**
 * ART's ExperimentalTrainingConfig (art/serverless/client.py), every key nullable: the client sends each one,
 * null where the script left ART's default. Unknown keys are kept, and refused by name when set
 * (art-train-config.ts): a knob Rollbook would silently ignore changes what the user thinks they trained.
 * Every number is finite (zod refuses NaN and ±Infinity; the door names Python's NaN literals) and the ones
 * Rollbook trains with are held to the trainer's ranges here, before any other check (a running job's 409).
 */
export const ArtExperimentalConfig = z.looseObject({
  advantage_balance: z.number().nullable().optional(),
  epsilon: trainerNumber("epsilon"),
  epsilon_high: trainerNumber("epsilon_high"),
  importance_sampling_level: line(64).nullable().optional(),
  kimi_k2_tau: z.number().nullable().optional(),
  learning_rate: trainerNumber("learning_rate"),
  mask_prob_ratio: z.boolean().nullable().optional(),
  max_negative_advantage_importance_sampling_weight: z.number().nullable().optional(),
  ppo: z.boolean().nullable().optional(),
  precalculate_logprobs: z.boolean().nullable().optional(),
  scale_rewards: z.boolean().nullable().optional(),
});
export type ArtExperimentalConfig = z.infer<typeof ArtExperimentalConfig>;

/** POST /preview/training-jobs. */
export const TrainingJobBody = z.object({
  model_id: ModelId,
  trajectory_groups: z.array(ArtTrajectoryGroup).min(1).max(L.groups),
  experimental_config: ArtExperimentalConfig.nullable().optional(),
});
export type TrainingJobBody = z.infer<typeof TrainingJobBody>;

/** GET /preview/training-jobs/{id}/events (query string): ART's cursor pages, `after` an event id. */
export const TrainingJobEventsQuery = z.object({
  after: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(100),
});

/** One event of a training job, as ART's client reads it (TrainingJobEvent). */
export const ArtJobEvent = z.object({
  id: z.string(),
  type: z.enum(["training_started", "gradient_step", "training_ended", "training_failed"]),
  data: z.record(z.string(), z.unknown()),
});
export type ArtJobEvent = z.infer<typeof ArtJobEvent>;

/** GET /preview/models/{id}/checkpoints (query string). */
export const CheckpointListQuery = z.object({
  order: z.enum(["asc", "desc"]).default("desc"),
  limit: z.coerce.number().int().min(1).max(1_000).default(100),
  after: z.string().max(200).optional(),
});

/** DELETE /preview/models/{id}/checkpoints. */
export const DeleteCheckpointsBody = z.object({ steps: z.array(z.number().int().min(0)).max(100_000) });

/** What the run keeps of its ART model (Run.artClient), shown in the run page's header. */
export const ArtClientInfo = z.object({
  entity: z.string(),
  project: z.string(),
  name: z.string(),
  tokenId: z.string().nullable(),
  tokenName: z.string().nullable(),
});
export type ArtClientInfo = z.infer<typeof ArtClientInfo>;

/** The stored JSON as ArtClientInfo, or null (a run of another kind, or a row written by hand). */
export function readArtClient(value: unknown): ArtClientInfo | null {
  const r = ArtClientInfo.safeParse(value);
  return r.success ? r.data : null;
}
