/**
 * The Tinker wire: what Thinking Machines' `tinker` Python SDK (0.38.0, pinned; scripts/tinker-venv.sh) sends and
 * reads, so that `tinker.ServiceClient(base_url="<rollbook>/api/tinker", api_key=...)` works unchanged. This layer
 * holds no routes and no state: it parses and builds bodies. Every SDK path is `<base_url>/api/v1/<route>`.
 *
 *   wire-proto.ts   the protobuf bodies (tinker_public.proto, transcribed from the SDK by dump_proto.py; loaded
 *                   from tinker_public.descriptor.json, which gen-descriptor.ts writes): decodeForwardBackwardRequest,
 *                   encodeSampleResponse, encodeForwardBackwardOutput, TinkerWireError
 *   schemas.ts      zod schemas of the JSON request bodies (REQUEST_SCHEMAS by route), builders of the JSON
 *                   answers, the failed-future / try-again shapes and HTTP error bodies
 *
 * Routes the SDK calls in a training + sampling loop, all covered here (→ what answers it):
 *   POST client/config                ClientConfigRequest → clientConfigResponse() (flags: API keys, no JWT; serial,
 *                                     uncompressed fwd/bwd chunks; httpx transport; per-future polling; custom
 *                                     losses client-side; no join_sampling_session)
 *   POST client/dynamic_config        ClientConfigRequest → clientDynamicConfigResponse() (no sample cancels; a 404
 *                                     also works: the SDK then uses the same defaults)
 *   POST create_session               CreateSessionRequest → createSessionResponse()
 *   POST session_heartbeat            SessionHeartbeatRequest → sessionHeartbeatResponse() (every 10 s; 410 ends it)
 *   GET  get_server_capabilities      → getServerCapabilitiesResponse() (also ServiceClient's accessibility check)
 *   POST create_model                 CreateModelRequest → untypedApiFuture() … createModelResponse()
 *   POST get_info                     GetInfoRequest → getInfoResponse() (model_data.model_name = the base model)
 *   POST forward_backward             protobuf ForwardBackwardRequest (Content-Type: application/x-protobuf;
 *                                     Content-Encoding: zstd only if proto_compress_fwdbwd, answered false) →
 *                                     untypedApiFuture() … encodeForwardBackwardOutput() (protobuf only)
 *   POST optim_step                   OptimStepRequest → untypedApiFuture() … optimStepResponse()
 *   POST save_weights                 SaveWeightsRequest → untypedApiFuture() … saveWeightsResponse()
 *   POST save_weights_for_sampler     SaveWeightsForSamplerRequest → untypedApiFuture() … saveWeightsForSamplerResponse()
 *   POST load_weights                 LoadWeightsRequest → untypedApiFuture() … loadWeightsResponse()
 *   POST create_sampling_session      CreateSamplingSessionRequest → createSamplingSessionResponse()
 *   GET  samplers/{sampler_id}        → getSamplerResponse() (when a sampling client is made from a model_path alone)
 *   POST asample                      SampleRequest → untypedApiFuture(id, {sample_sequence_ids}) …
 *                                     encodeSampleResponse() (protobuf only; unservedSampleFields says what to refuse)
 *   POST retrieve_future              FutureRetrieveRequest → the result: JSON, or protobuf (Content-Type:
 *                                     application/x-protobuf) when the SDK sent `Accept: application/x-protobuf`
 *                                     (SampleResponse, ForwardBackwardOutput); tryAgainResponse() while pending;
 *                                     failedFutureResponse(error, "user" | "server" | "unknown") with HTTP 200 when
 *                                     it failed. (allow_metadata_only may be ignored: the full payload is always valid.)
 *   POST telemetry                    TelemetrySendRequest → telemetryResponse()
 *   POST sessions/{session_id}/finish SessionFinishRequest → any 2xx (on ServiceClient.close)
 *   POST weights_info                 WeightsInfoRequest → weightsInfoResponse() (RestClient.get_weights_info_by_tinker_path)
 *   POST cancel_future                CancelFutureRequest → any 2xx (only sent when sample_cancel_enabled, never here)
 * A non-2xx answer: tinkerErrorBody() / tinkerErrorFromZod() (the `detail` names the field; the SDK shows it in the
 * APIStatusError's str()).
 *
 * SDK routes not covered (the flags above keep the loop off the first four; the rest are REST / admin / CLI calls):
 *   retrieve_futures, join_sampling_session, create_custom_loss, auth/token, save_weights_external, copy_weights,
 *   healthz, training_runs (list, get, checkpoints list / delete / publish / ttl / external_weights_urls),
 *   checkpoints, sessions (list, get, search, project, trace_export), audit, billing/usage/*, auth/apikey/me.
 */
export {
  DEFAULT_DECODE_LIMITS,
  DType,
  StopReasonEnum,
  TinkerWireError,
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  tinkerPublic,
  type DecodeLimits,
  type DecodedDatum,
  type DecodedForwardBackwardRequest,
  type DecodedTensor,
  type ForwardBackwardOutputInput,
  type OutputTensorInput,
  type SampleResponseInput,
  type SampledSequenceInput,
  type StopReason,
  type TensorDtype,
} from "./wire-proto";
export * from "./schemas";
