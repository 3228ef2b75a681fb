/**
 * The JSON side of the Tinker wire (tinker SDK 0.38.0): zod schemas of the request bodies the SDK sends in a
 * training + sampling loop, and TS types + builders of the JSON answers it reads.
 *
 * Request schemas are copied from the SDK's pydantic types (tinker/types/*.py): field names, types, defaults.
 * The SDK dumps every body with `model_dump(request, exclude_unset=False, exclude_none=True, mode="json")`, so
 * a field that is `Optional[...] = None` is absent rather than null: those are `.nullish()` here. Fields with a
 * default are always sent by this SDK but get the same default here. Unknown keys are stripped (an SDK newer
 * than the pin may add some); what a known field asks for that Rollbook does not serve is for the route to refuse
 * (see unservedSampleFields).
 *
 * Answers: the SDK validates a direct answer strictly against its pydantic model (AsyncTinker is built with
 * `_strict_response_validation=True`), and a future's result with `model_validate`; the builders produce exactly
 * the fields those models declare (schemas.test.ts has the SDK validate each one).
 */
import { z } from "zod";
import type { ZodError } from "zod";

const int = () => z.number().int();
const Metadata = z.record(z.string(), z.unknown());

// ---------------------------------------------------------------------------------------------------------------
// Requests

/** POST /api/v1/client/config and /api/v1/client/dynamic_config (types/client_config_request.py). */
export const ClientConfigRequest = z.object({ sdk_version: z.string() });

/** POST /api/v1/create_session (types/create_session_request.py). */
export const CreateSessionRequest = z.object({
  tags: z.array(z.string()),
  user_metadata: Metadata.nullish(),
  sdk_version: z.string(),
  project_id: z.string().nullish(),
  display_name: z.string().nullish(),
  type: z.literal("create_session").default("create_session"),
});

/** POST /api/v1/session_heartbeat, every 10 s (types/session_heartbeat_request.py). A 410 answer stops the loop. */
export const SessionHeartbeatRequest = z.object({
  session_id: z.string(),
  type: z.literal("session_heartbeat").default("session_heartbeat"),
});

/** types/lora_config.py */
export const LoraConfig = z.object({
  rank: int(),
  seed: int().nullish(),
  train_unembed: z.boolean().default(true),
  train_mlp: z.boolean().default(true),
  train_attn: z.boolean().default(true),
});

/** types/optimizer.py OptimizerConfig: AdamOptimizerConfig `{type: "adamw"}` or another family by `type`
 *  (DimuonOptimizerConfig `{type: "dimuon", version: 1}`), its extra fields kept. */
export const OptimizerConfig = z.looseObject({ type: z.string() });

/** POST /api/v1/create_model (types/create_model_request.py); answered with a future of CreateModelResponse. */
export const CreateModelRequest = z.object({
  session_id: z.string(),
  model_seq_id: int(),
  base_model: z.string(),
  user_metadata: Metadata.nullish(),
  lora_config: LoraConfig.nullish(),
  optimizer_config: OptimizerConfig.default({ type: "adamw" }),
  type: z.literal("create_model").default("create_model"),
});

/** POST /api/v1/get_info (types/get_info_request.py); answered directly with GetInfoResponse. */
export const GetInfoRequest = z.object({
  model_id: z.string(),
  type: z.literal("get_info").default("get_info"),
});

/** types/optimizer.py AdamParams, with its defaults. */
export const AdamParams = z.object({
  learning_rate: z.number().default(0.0001),
  beta1: z.number().default(0.9),
  beta2: z.number().default(0.95),
  eps: z.number().default(1e-12),
  weight_decay: z.number().default(0.0),
  grad_clip_norm: z.number().default(0.0),
});

/** POST /api/v1/optim_step (types/optim_step_request.py). The SDK's serializer renames `optim_params` to
 *  `adam_params` for AdamParams and to `optimizer_params` for another family (`{type: "dimuon", ...}`); its
 *  validator also accepts `optim_params`. Exactly one of the three. */
export const OptimStepRequest = z
  .object({
    adam_params: AdamParams.optional(),
    optimizer_params: z.looseObject({ type: z.string() }).optional(),
    optim_params: z.union([AdamParams, z.looseObject({ type: z.string() })]).optional(),
    model_id: z.string(),
    seq_id: int().nullish(),
    type: z.literal("optim_step").default("optim_step"),
  })
  .superRefine((v, ctx) => {
    const given = (["adam_params", "optimizer_params", "optim_params"] as const).filter((k) => v[k] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({
        code: "custom",
        path: given.length === 0 ? ["adam_params"] : [given[1]!],
        message: given.length === 0 ? "adam_params (or optimizer_params) is required" : `only one of ${given.join(", ")}`,
      });
    }
  });

/** POST /api/v1/save_weights (types/save_weights_request.py): TrainingClient.save_state. */
export const SaveWeightsRequest = z.object({
  model_id: z.string(),
  path: z.string().nullish(),
  seq_id: int().nullish(),
  ttl_seconds: int().nullish(),
  overwrite: z.boolean().default(false),
  user_metadata: z.record(z.string(), z.string()).nullish(),
  type: z.literal("save_weights").default("save_weights"),
});

/** types/sampling_client_kind.py */
export const SamplingClientKind = z.enum(["snapshot", "inflight"]);

/** POST /api/v1/save_weights_for_sampler (types/save_weights_for_sampler_request.py). With `path` (a name:
 *  save_weights_for_sampler(name)) the future's result must carry `path`; without it
 *  (save_weights_and_get_sampling_client) it carries `sampling_session_id`, a sampling session the server made
 *  for `sampling_session_seq_id`. */
export const SaveWeightsForSamplerRequest = z.object({
  model_id: z.string(),
  path: z.string().nullish(),
  sampling_session_seq_id: int().nullish(),
  kind: SamplingClientKind.default("snapshot"),
  seq_id: int().nullish(),
  ttl_seconds: int().nullish(),
  user_metadata: z.record(z.string(), z.string()).nullish(),
  type: z.literal("save_weights_for_sampler").default("save_weights_for_sampler"),
});

/** POST /api/v1/load_weights (types/load_weights_request.py): either `model_id` + `seq_id` (load_state on an
 *  existing model) or `session_id` + `model_seq_id` (create_training_client_from_state: the load creates the
 *  model `<session_id>:train:<model_seq_id>`). */
export const LoadWeightsRequest = z.object({
  model_id: z.string().nullish(),
  seq_id: int().nullish(),
  session_id: z.string().nullish(),
  model_seq_id: int().nullish(),
  base_model: z.string().nullish(),
  user_metadata: Metadata.nullish(),
  path: z.string(),
  optimizer: z.boolean(),
  optimizer_config: OptimizerConfig.nullish(),
  weights_access_token: z.string().nullish(),
  type: z.literal("load_weights").default("load_weights"),
});

/** POST /api/v1/create_sampling_session (types/create_sampling_session_request.py). */
export const CreateSamplingSessionRequest = z.object({
  session_id: z.string(),
  sampling_session_seq_id: int(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  type: z.literal("create_sampling_session").default("create_sampling_session"),
});

/** types/model_input_chunk.py: a discriminated union on `type`. Only encoded_text is served; the others parse
 *  (so a refusal can name them). */
export const EncodedTextChunk = z.object({ tokens: z.array(int()), type: z.literal("encoded_text") });
export const ModelInputChunk = z.discriminatedUnion("type", [
  EncodedTextChunk,
  z.object({ data: z.string(), format: z.enum(["png", "jpeg"]), expected_tokens: int().nullish(), type: z.literal("image") }),
  z.object({ format: z.enum(["png", "jpeg"]), location: z.string(), expected_tokens: int().nullish(), type: z.literal("image_asset_pointer") }),
  z.object({ dmel: z.string(), type: z.literal("dmel") }),
]);
export const ModelInput = z.object({ chunks: z.array(ModelInputChunk) });

/** types/_pydantic_types/sampling_params.py. `stop`: a string, strings, or token ids; absent keeps EOS
 *  stopping, [] disables every stop (EOS included). */
export const SamplingParams = z.object({
  max_tokens: int().nullish(),
  seed: int().nullish(),
  stop: z.union([z.string(), z.array(z.string()), z.array(int())]).nullish(),
  temperature: z.number().default(1),
  top_k: int().default(-1),
  top_p: z.number().default(1),
});

/** The JSON shape of a TensorData (types/_pydantic_types/tensor_data.py). */
export const TensorDataJson = z.object({
  data: z.array(z.number()),
  dtype: z.enum(["float32", "int64"]),
  shape: z.array(int()).nullish(),
  sparse_crow_indices: z.array(int()).nullish(),
  sparse_col_indices: z.array(int()).nullish(),
});

/** POST /api/v1/asample (types/sample_request.py); answered with a future of SampleResponse (protobuf) whose
 *  UntypedAPIFuture must carry `sample_sequence_ids`, one per sample. SamplingClient sends
 *  `sampling_session_id` + `seq_id`; `base_model` / `model_path` are the session-less addressing. */
export const SampleRequest = z.object({
  num_samples: int().default(1),
  prompt: ModelInput,
  sampling_params: SamplingParams,
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
  seq_id: int().nullish(),
  prompt_logprobs: z.boolean().nullish(),
  topk_prompt_logprobs: int().default(0),
  topk_sample_logprobs: int().default(0),
  target_prompt_logprobs: TensorDataJson.nullish(),
  prompt_alt_tokens_k: int().default(0),
  prompt_logprobs_last_n: int().nullish(),
  record_stability_info: z.boolean().nullish(),
  type: z.literal("sample").default("sample"),
});

/** POST /api/v1/retrieve_future (types/future_retrieve_request.py): the SDK's poll of every future. */
export const FutureRetrieveRequest = z.object({
  request_id: z.string(),
  allow_metadata_only: z.boolean().default(false),
});

/** types/telemetry_event.py: SessionStart / SessionEnd / UnhandledException / Generic events; the fields each
 *  has in common, the rest kept as sent. */
export const TelemetryEvent = z.looseObject({
  event: z.enum(["SESSION_START", "SESSION_END", "UNHANDLED_EXCEPTION", "GENERIC_EVENT"]),
  event_id: z.string(),
  event_session_index: int(),
  severity: z.enum(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
  timestamp: z.string(),
});

/** POST /api/v1/telemetry (types/telemetry_send_request.py). */
export const TelemetrySendRequest = z.object({
  events: z.array(TelemetryEvent),
  platform: z.string(),
  sdk_version: z.string(),
  session_id: z.string(),
  process_uuid: z.string(),
});

/** POST /api/v1/cancel_future (lib/internal_client_holder.py posts the dict itself; only when the dynamic
 *  config's sample_cancel_enabled is true, which Rollbook does not answer). */
export const CancelFutureRequest = z.object({ request_id: z.string() });

/** POST /api/v1/sessions/{session_id}/finish (lib/public_interfaces/service_client.py, on ServiceClient.close). */
export const SessionFinishRequest = z.object({
  reason: z.object({ type: z.enum(["success", "errored", "interrupted"]) }),
  detail: z.string().nullish(),
});

/** POST /api/v1/weights_info (RestClient.get_weights_info_by_tinker_path posts the dict itself). */
export const WeightsInfoRequest = z.object({ tinker_path: z.string() });

export type ClientConfigRequest = z.infer<typeof ClientConfigRequest>;
export type CreateSessionRequest = z.infer<typeof CreateSessionRequest>;
export type SessionHeartbeatRequest = z.infer<typeof SessionHeartbeatRequest>;
export type LoraConfig = z.infer<typeof LoraConfig>;
export type CreateModelRequest = z.infer<typeof CreateModelRequest>;
export type GetInfoRequest = z.infer<typeof GetInfoRequest>;
export type AdamParams = z.infer<typeof AdamParams>;
export type OptimStepRequest = z.infer<typeof OptimStepRequest>;
export type SaveWeightsRequest = z.infer<typeof SaveWeightsRequest>;
export type SaveWeightsForSamplerRequest = z.infer<typeof SaveWeightsForSamplerRequest>;
export type LoadWeightsRequest = z.infer<typeof LoadWeightsRequest>;
export type CreateSamplingSessionRequest = z.infer<typeof CreateSamplingSessionRequest>;
export type ModelInput = z.infer<typeof ModelInput>;
export type SamplingParams = z.infer<typeof SamplingParams>;
export type SampleRequest = z.infer<typeof SampleRequest>;
export type FutureRetrieveRequest = z.infer<typeof FutureRetrieveRequest>;
export type TelemetrySendRequest = z.infer<typeof TelemetrySendRequest>;
export type CancelFutureRequest = z.infer<typeof CancelFutureRequest>;
export type SessionFinishRequest = z.infer<typeof SessionFinishRequest>;
export type WeightsInfoRequest = z.infer<typeof WeightsInfoRequest>;

/** The JSON schema of each SDK route this layer covers, by its path under /api/v1/ (GET routes have none). */
export const REQUEST_SCHEMAS = {
  "client/config": ClientConfigRequest,
  "client/dynamic_config": ClientConfigRequest,
  create_session: CreateSessionRequest,
  session_heartbeat: SessionHeartbeatRequest,
  create_model: CreateModelRequest,
  get_info: GetInfoRequest,
  optim_step: OptimStepRequest,
  save_weights: SaveWeightsRequest,
  save_weights_for_sampler: SaveWeightsForSamplerRequest,
  load_weights: LoadWeightsRequest,
  create_sampling_session: CreateSamplingSessionRequest,
  asample: SampleRequest,
  retrieve_future: FutureRetrieveRequest,
  telemetry: TelemetrySendRequest,
  cancel_future: CancelFutureRequest,
  "sessions/{session_id}/finish": SessionFinishRequest,
  weights_info: WeightsInfoRequest,
} as const;

/** The SampleRequest fields asking for what Rollbook's sampler does not serve, each with why: for the route to
 *  refuse (tinkerErrorBody) rather than answer without it. Empty when the request is servable. */
export function unservedSampleFields(req: SampleRequest): { field: string; message: string }[] {
  const out: { field: string; message: string }[] = [];
  req.prompt.chunks.forEach((c, i) => {
    if (c.type !== "encoded_text") out.push({ field: `prompt.chunks[${i}]`, message: `${c.type} chunks are not served` });
  });
  if (req.topk_prompt_logprobs > 0) out.push({ field: "topk_prompt_logprobs", message: "top-k prompt logprobs are not served" });
  if (req.topk_sample_logprobs > 0) out.push({ field: "topk_sample_logprobs", message: "top-k sample logprobs are not served" });
  if (req.target_prompt_logprobs != null) out.push({ field: "target_prompt_logprobs", message: "target prompt logprobs are not served" });
  if (req.prompt_alt_tokens_k > 0) out.push({ field: "prompt_alt_tokens_k", message: "prompt alt tokens are not served" });
  if (req.prompt_logprobs_last_n != null) out.push({ field: "prompt_logprobs_last_n", message: "prompt_logprobs_last_n is not served" });
  if (req.record_stability_info === true) out.push({ field: "record_stability_info", message: "stability info is not recorded" });
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Answers

/** types/create_session_response.py */
export interface CreateSessionResponse {
  type: "create_session";
  session_id: string;
  info_message?: string;
  warning_message?: string;
  error_message?: string;
}
/** The SDK logs each message at its level. */
export function createSessionResponse(
  session_id: string,
  messages: { info_message?: string; warning_message?: string; error_message?: string } = {},
): CreateSessionResponse {
  return { type: "create_session", session_id, ...messages };
}

export interface SessionHeartbeatResponse {
  type: "session_heartbeat";
}
export const sessionHeartbeatResponse = (): SessionHeartbeatResponse => ({ type: "session_heartbeat" });

/** types/client_config_response.py: the flags that decide which paths the SDK takes. */
export interface ClientConfigResponse {
  pjwt_auth_enabled: false;
  credential_default_source: "api_key";
  parallel_fwdbwd_chunks: false;
  proto_compress_fwdbwd: false;
  use_pyqwest_transport: false;
  sample_use_retrieve_futures: false;
  custom_loss_server_side: false;
  sample_join_sampling_session: false;
  sample_no_retries: boolean;
  fwdbwd_max_chunk_len: number;
  fwdbwd_max_chunk_bytes_count: number;
}
/** Rollbook's answer: API keys only (no JWT exchange), uncompressed protobuf fwd/bwd bodies sent one chunk at a
 *  time in turn (serial seq_ids), httpx's own transport, per-future retrieve_future polling (no
 *  retrieve_futures poller), custom losses run in the client, no join_sampling_session. The chunking limits are
 *  the SDK's defaults, named so a server can lower them. */
export function clientConfigResponse(limits: { fwdbwd_max_chunk_len?: number; fwdbwd_max_chunk_bytes_count?: number } = {}): ClientConfigResponse {
  return {
    pjwt_auth_enabled: false,
    credential_default_source: "api_key",
    parallel_fwdbwd_chunks: false,
    proto_compress_fwdbwd: false,
    use_pyqwest_transport: false,
    sample_use_retrieve_futures: false,
    custom_loss_server_side: false,
    sample_join_sampling_session: false,
    sample_no_retries: false,
    fwdbwd_max_chunk_len: limits.fwdbwd_max_chunk_len ?? 1024,
    fwdbwd_max_chunk_bytes_count: limits.fwdbwd_max_chunk_bytes_count ?? 5_000_000,
  };
}

/** types/client_dynamic_config_response.py (POST /api/v1/client/dynamic_config, re-read every
 *  refresh_interval_sec; a 404 makes the SDK use these same defaults). */
export interface ClientDynamicConfigResponse {
  refresh_interval_sec: number;
  sample_cancel_enabled: false;
  sample_cancel_max_batch_size: number;
}
export const clientDynamicConfigResponse = (): ClientDynamicConfigResponse => ({
  refresh_interval_sec: 300,
  sample_cancel_enabled: false,
  sample_cancel_max_batch_size: 64,
});

/** types/get_server_capabilities_response.py (GET /api/v1/get_server_capabilities; ServiceClient also calls it
 *  as an accessibility check). */
export interface SupportedModel {
  model_name: string;
  max_context_length?: number;
  trainable?: boolean;
  sampleable?: boolean;
}
export interface GetServerCapabilitiesResponse {
  supported_models: SupportedModel[];
}
export const getServerCapabilitiesResponse = (supported_models: SupportedModel[]): GetServerCapabilitiesResponse => ({ supported_models });

/** types/_pydantic_types/get_info_response.py. The SDK reads `model_data.model_name` as the base model (it names
 *  sampling clients made from this model and loads the tokenizer: `model_data.tokenizer_id` when set, else an
 *  id derived from the name). */
export interface GetInfoResponse {
  type: "get_info";
  model_id: string;
  model_data: { arch?: string; model_name: string; tokenizer_id?: string };
  optimizer_config: { type: string };
  is_lora: boolean;
  lora_rank?: number;
  model_name: string;
}
export function getInfoResponse(info: {
  model_id: string;
  base_model: string;
  lora_rank: number | null;
  tokenizer_id?: string;
  arch?: string;
  optimizer_type?: string;
}): GetInfoResponse {
  return {
    type: "get_info",
    model_id: info.model_id,
    model_data: {
      model_name: info.base_model,
      ...(info.arch !== undefined ? { arch: info.arch } : {}),
      ...(info.tokenizer_id !== undefined ? { tokenizer_id: info.tokenizer_id } : {}),
    },
    optimizer_config: { type: info.optimizer_type ?? "adamw" },
    is_lora: info.lora_rank !== null,
    ...(info.lora_rank !== null ? { lora_rank: info.lora_rank } : {}),
    model_name: info.base_model,
  };
}

/** types/shared/untyped_api_future.py: what every future-returning POST answers at once. */
export interface UntypedAPIFuture {
  request_id: string;
  model_id?: string;
  /** asample only, and required there: one id per requested sample, in the order of the SampleResponse's
   *  sequences (the SDK asserts the counts match and stamps each sequence's sequence_id with it). */
  sample_sequence_ids?: string[];
}
export function untypedApiFuture(request_id: string, extra: { model_id?: string; sample_sequence_ids?: string[] } = {}): UntypedAPIFuture {
  return { request_id, ...extra };
}

/** Future results read as JSON (everything but SampleResponse and ForwardBackwardOutput, which are protobuf). */
export interface CreateModelResponse {
  type: "create_model";
  model_id: string;
}
export const createModelResponse = (model_id: string): CreateModelResponse => ({ type: "create_model", model_id });

export interface OptimStepResponse {
  metrics?: Record<string, number>;
}
export const optimStepResponse = (metrics?: Record<string, number>): OptimStepResponse => (metrics ? { metrics } : {});

/** `path`: the tinker:// URI of the checkpoint (tinker://<model_id>/weights/<name>, by the SDK's convention). */
export interface SaveWeightsResponse {
  type: "save_weights";
  path: string;
}
export const saveWeightsResponse = (path: string): SaveWeightsResponse => ({ type: "save_weights", path });

/** The SDK reads this as SaveWeightsForSamplerResponseInternal: a request with a `path` needs `path` back
 *  (tinker://<model_id>/sampler_weights/<name>); one without needs `sampling_session_id` back. */
export interface SaveWeightsForSamplerResponse {
  type: "save_weights_for_sampler";
  path?: string;
  sampling_session_id?: string;
}
export function saveWeightsForSamplerResponse(result: { path: string } | { sampling_session_id: string; path?: string }): SaveWeightsForSamplerResponse {
  return { type: "save_weights_for_sampler", ...result };
}

export interface LoadWeightsResponse {
  type: "load_weights";
  path?: string;
  model_id?: string;
}
export const loadWeightsResponse = (result: { path?: string; model_id?: string }): LoadWeightsResponse => ({ type: "load_weights", ...result });

/** types/create_sampling_session_response.py */
export interface CreateSamplingSessionResponse {
  type: "create_sampling_session";
  sampling_session_id: string;
}
export const createSamplingSessionResponse = (sampling_session_id: string): CreateSamplingSessionResponse => ({
  type: "create_sampling_session",
  sampling_session_id,
});

/** GET /api/v1/samplers/{sampler_id} (types/get_sampler_response.py): the SDK asks when a sampling client is
 *  made from a model_path without a base_model. */
export interface GetSamplerResponse {
  sampler_id: string;
  base_model: string;
  model_path?: string;
}
export const getSamplerResponse = (r: GetSamplerResponse): GetSamplerResponse => ({ ...r });

/** types/weights_info_response.py */
export interface WeightsInfoResponse {
  base_model: string;
  optimizer_config: { type: string };
  is_lora: boolean;
  lora_rank?: number;
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}
export function weightsInfoResponse(base_model: string, lora: LoraConfig | null): WeightsInfoResponse {
  return {
    base_model,
    optimizer_config: { type: "adamw" },
    is_lora: lora !== null,
    ...(lora ? { lora_rank: lora.rank, train_unembed: lora.train_unembed, train_mlp: lora.train_mlp, train_attn: lora.train_attn } : {}),
  };
}

export interface TelemetryResponse {
  status: "accepted";
}
export const telemetryResponse = (): TelemetryResponse => ({ status: "accepted" });

/** retrieve_future's "not yet" (types/try_again_response.py). The SDK polls again at once (the server should
 *  hold the poll open a while before answering it: the SDK's own timeout on it is 45 s). */
export type QueueState = "active" | "paused_capacity" | "paused_rate_limit";
export interface TryAgainResponse {
  type: "try_again";
  request_id: string;
  queue_state: QueueState;
  queue_state_reason?: string;
}
export function tryAgainResponse(request_id: string, queue_state: QueueState = "active", queue_state_reason?: string): TryAgainResponse {
  return { type: "try_again", request_id, queue_state, ...(queue_state_reason !== undefined ? { queue_state_reason } : {}) };
}

/** types/request_error_category.py (a StrEnum of auto() values). */
export const REQUEST_ERROR_CATEGORIES = ["unknown", "server", "user"] as const;
export type RequestErrorCategory = (typeof REQUEST_ERROR_CATEGORIES)[number];

/** A future that failed (types/request_failed_response.py), answered by retrieve_future with HTTP 200: the SDK
 *  raises RequestFailedError("Request failed: <error> ...", category). */
export interface RequestFailedResponse {
  error: string;
  category: RequestErrorCategory;
}
export const failedFutureResponse = (error: string, category: RequestErrorCategory): RequestFailedResponse => ({ error, category });

// ---------------------------------------------------------------------------------------------------------------
// HTTP errors

/** A non-2xx answer. The SDK (_base_client._make_status_error_from_response) raises an APIStatusError subclass by
 *  status whose str() is `Error code: <status> - <the JSON body, as a Python dict>`: the body's `detail` names the
 *  field, so the user reads it in the exception. `x-should-retry: false` stops the client's own retries for a
 *  status it would otherwise retry (408, 409, 429, 5xx); the SDK's execute_with_retries does not retry 4xx but
 *  408/409/429 anyway. Status guide: 400 a malformed body; 404 an unknown session/model/future; 410 a finished
 *  session (stops the heartbeat loop); 401 a bad API key. */
export interface TinkerErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: { detail: string; field?: string };
}
export function tinkerErrorBody(status: number, message: string, field?: string): TinkerErrorAnswer {
  return {
    status,
    headers: { "content-type": "application/json", "x-should-retry": "false" },
    body: { detail: field && !message.startsWith(`${field}:`) ? `${field}: ${message}` : message, ...(field ? { field } : {}) },
  };
}

/** A zod failure on a request body as a 400 naming the first failing field (`sampling_params.max_tokens:
 *  expected number, received string`), the others counted. */
export function tinkerErrorFromZod(error: ZodError, status = 400): TinkerErrorAnswer {
  const [first, ...rest] = error.issues;
  if (!first) return tinkerErrorBody(status, "invalid request body");
  const field = first.path.length > 0 ? first.path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("") : "body";
  const more = rest.length > 0 ? ` (and ${rest.length} more)` : "";
  return tinkerErrorBody(status, `${first.message}${more}`, field);
}
