/**
 * The JSON wire against the real Tinker SDK (0.38.0, in the venv scripts/tinker-venv.sh builds):
 *  - every request body the SDK builds for the routes of a training + sampling loop (its own types, dumped as
 *    tinker/resources/*.py dump them) parses, and parses to itself: no field the SDK sends is dropped;
 *  - every answer builder's JSON validates against the pydantic model the SDK reads it with;
 *  - an error body shows its field in the str() of the APIStatusError the SDK raises.
 */
import { beforeAll, describe, expect, test } from "vitest";
import type { z } from "zod";
import { SDK_SETUP_TIMEOUT_MS, probeMake, probeRead, type ProbeMake, type ProbeRead } from "./sdk-probe.testkit";
import {
  REQUEST_ERROR_CATEGORIES,
  REQUEST_SCHEMAS,
  SampleRequest,
  clientConfigResponse,
  clientDynamicConfigResponse,
  createModelResponse,
  createSamplingSessionResponse,
  createSessionResponse,
  failedFutureResponse,
  getInfoResponse,
  getSamplerResponse,
  getServerCapabilitiesResponse,
  loadWeightsResponse,
  optimStepResponse,
  saveWeightsForSamplerResponse,
  saveWeightsResponse,
  sessionHeartbeatResponse,
  telemetryResponse,
  tinkerErrorBody,
  tinkerErrorFromZod,
  tryAgainResponse,
  unservedSampleFields,
  untypedApiFuture,
  weightsInfoResponse,
} from "./schemas";

let made: ProbeMake;
beforeAll(async () => {
  made = await probeMake();
}, SDK_SETUP_TIMEOUT_MS);

// sdk_probe's names for the routes → REQUEST_SCHEMAS's (paths under /api/v1/).
const ROUTE: Record<string, keyof typeof REQUEST_SCHEMAS | null> = {
  client_config: "client/config",
  client_dynamic_config: "client/dynamic_config",
  create_session: "create_session",
  session_heartbeat: "session_heartbeat",
  create_model: "create_model",
  get_info: "get_info",
  get_server_capabilities: null, // a GET, no body
  optim_step: "optim_step",
  save_weights: "save_weights",
  save_weights_for_sampler: "save_weights_for_sampler",
  load_weights: "load_weights",
  create_sampling_session: "create_sampling_session",
  asample: "asample",
  retrieve_future: "retrieve_future",
  telemetry: "telemetry",
  cancel_future: "cancel_future",
  session_finish: "sessions/{session_id}/finish",
  weights_info: "weights_info",
};

describe("request schemas accept what the SDK sends", () => {
  test("every body parses to itself (no field the SDK sends is unknown here)", () => {
    expect(Object.keys(made.bodies).sort()).toEqual(Object.keys(ROUTE).sort());
    const covered = new Set<string>();
    for (const [name, bodies] of Object.entries(made.bodies)) {
      const route = ROUTE[name];
      if (route === null || route === undefined) continue;
      covered.add(route);
      expect(bodies.length, name).toBeGreaterThan(0);
      for (const body of bodies) {
        const parsed = (REQUEST_SCHEMAS[route] as z.ZodType).safeParse(body);
        expect(parsed.error, `${name}: ${JSON.stringify(body)}`).toBeUndefined();
        expect(parsed.data, name).toEqual(body);
      }
    }
    expect([...covered].sort()).toEqual(Object.keys(REQUEST_SCHEMAS).sort());
  });

  test("fields the SDK leaves out (exclude_none) get the SDK's defaults", () => {
    const optim = REQUEST_SCHEMAS.optim_step.parse({ model_id: "m", adam_params: {} });
    expect(optim.adam_params).toEqual({ learning_rate: 0.0001, beta1: 0.9, beta2: 0.95, eps: 1e-12, weight_decay: 0, grad_clip_norm: 0 });
    expect(optim.seq_id).toBeUndefined();
    expect(() => REQUEST_SCHEMAS.optim_step.parse({ model_id: "m" })).toThrow(/adam_params/);
    const model = REQUEST_SCHEMAS.create_model.parse({ session_id: "s", model_seq_id: 0, base_model: "b", lora_config: { rank: 4 } });
    expect(model.lora_config).toEqual({ rank: 4, train_unembed: true, train_mlp: true, train_attn: true });
    expect(model.optimizer_config).toEqual({ type: "adamw" });
    const sample = SampleRequest.parse({ prompt: { chunks: [] }, sampling_params: {} });
    expect(sample).toMatchObject({ num_samples: 1, topk_prompt_logprobs: 0, sampling_params: { temperature: 1, top_k: -1, top_p: 1 } });
  });

  test("the SDK's sample bodies are servable; what is not served is named", () => {
    for (const body of made.bodies.asample!) expect(unservedSampleFields(SampleRequest.parse(body))).toEqual([]);
    const req = SampleRequest.parse({
      prompt: { chunks: [{ type: "encoded_text", tokens: [1] }, { type: "image", data: "AA==", format: "png" }] },
      sampling_params: {},
      topk_prompt_logprobs: 5,
      prompt_alt_tokens_k: 2,
    });
    expect(unservedSampleFields(req).map((u) => u.field)).toEqual(["prompt.chunks[1]", "topk_prompt_logprobs", "prompt_alt_tokens_k"]);
  });
});

describe("answers, read by the SDK's own models", () => {
  const answers: { kind: string; value: unknown }[] = [
    { kind: "CreateSessionResponse", value: createSessionResponse("sess-1") },
    { kind: "CreateSessionResponse", value: createSessionResponse("sess-2", { warning_message: "served by Rollbook" }) },
    { kind: "SessionHeartbeatResponse", value: sessionHeartbeatResponse() },
    { kind: "ClientConfigResponse", value: clientConfigResponse() },
    { kind: "ClientDynamicConfigResponse", value: clientDynamicConfigResponse() },
    { kind: "GetServerCapabilitiesResponse", value: getServerCapabilitiesResponse([{ model_name: "Qwen/Qwen3-0.6B", max_context_length: 4096, trainable: true, sampleable: true }]) },
    { kind: "GetInfoResponse", value: getInfoResponse({ model_id: "sess-1:train:0", base_model: "Qwen/Qwen3-0.6B", lora_rank: 32 }) },
    { kind: "GetInfoResponse", value: getInfoResponse({ model_id: "m", base_model: "b", lora_rank: null, tokenizer_id: "t", arch: "qwen3" }) },
    { kind: "UntypedAPIFuture", value: untypedApiFuture("req-1", { model_id: "sess-1:train:0" }) },
    { kind: "UntypedAPIFuture", value: untypedApiFuture("req-2", { sample_sequence_ids: ["seq-a", "seq-b"] }) },
    { kind: "CreateModelResponse", value: createModelResponse("sess-1:train:0") },
    { kind: "OptimStepResponse", value: optimStepResponse({ "grad_norm:mean": 0.5 }) },
    { kind: "OptimStepResponse", value: optimStepResponse() },
    { kind: "SaveWeightsResponse", value: saveWeightsResponse("tinker://sess-1:train:0/weights/step-10") },
    { kind: "SaveWeightsForSamplerResponseInternal", value: saveWeightsForSamplerResponse({ path: "tinker://sess-1:train:0/sampler_weights/s" }) },
    { kind: "SaveWeightsForSamplerResponseInternal", value: saveWeightsForSamplerResponse({ sampling_session_id: "sess-1:sample:0" }) },
    { kind: "LoadWeightsResponse", value: loadWeightsResponse({ path: "tinker://x/weights/y", model_id: "sess-1:train:1" }) },
    { kind: "CreateSamplingSessionResponse", value: createSamplingSessionResponse("sess-1:sample:0") },
    { kind: "GetSamplerResponse", value: getSamplerResponse({ sampler_id: "sess-1:sample:0", base_model: "b", model_path: "tinker://x/sampler_weights/y" }) },
    { kind: "WeightsInfoResponse", value: weightsInfoResponse("b", { rank: 8, seed: null, train_unembed: false, train_mlp: true, train_attn: true }) },
    { kind: "TelemetryResponse", value: telemetryResponse() },
    { kind: "TryAgainResponse", value: tryAgainResponse("req-1") },
    { kind: "RequestFailedResponse", value: failedFutureResponse("data[0]: too long for the model", "user") },
  ];
  const errors = [
    tinkerErrorBody(400, "image chunks are not served", "data[3].model_input[1]"),
    tinkerErrorFromZod(SampleRequest.safeParse({ prompt: { chunks: [{ type: "encoded_text", tokens: [1, "x"] }] }, sampling_params: { max_tokens: "9" } }).error!),
    tinkerErrorBody(404, "no session sess-9", "session_id"),
    tinkerErrorBody(410, "session sess-1 has finished"),
  ];
  let read: ProbeRead;
  beforeAll(async () => {
    read = await probeRead({ json: answers, status_errors: errors.map((e) => ({ status: e.status, body: e.body })) });
  }, SDK_SETUP_TIMEOUT_MS);

  test("every builder's JSON validates", () => {
    read.json.forEach((r, i) => expect(r.error, `${answers[i]!.kind}: ${JSON.stringify(answers[i]!.value)}`).toBeUndefined());
  });

  test("the SDK reads the fields that decide its behaviour as built", () => {
    const byKind = (kind: string, n = 0) => read.json.filter((_, i) => answers[i]!.kind === kind)[n]!.ok!;
    expect(byKind("ClientConfigResponse")).toMatchObject({
      pjwt_auth_enabled: false,
      parallel_fwdbwd_chunks: false,
      proto_compress_fwdbwd: false,
      use_pyqwest_transport: false,
      sample_use_retrieve_futures: false,
      custom_loss_server_side: false,
      sample_join_sampling_session: false,
    });
    expect(byKind("ClientDynamicConfigResponse")).toMatchObject({ sample_cancel_enabled: false });
    expect(byKind("GetInfoResponse")).toMatchObject({ model_data: { model_name: "Qwen/Qwen3-0.6B" }, is_lora: true, lora_rank: 32 });
    expect(byKind("UntypedAPIFuture", 1)).toMatchObject({ request_id: "req-2", sample_sequence_ids: ["seq-a", "seq-b"] });
    expect(byKind("SaveWeightsForSamplerResponseInternal", 0)).toMatchObject({ path: "tinker://sess-1:train:0/sampler_weights/s", sampling_session_id: null });
    expect(byKind("SaveWeightsForSamplerResponseInternal", 1)).toMatchObject({ path: null, sampling_session_id: "sess-1:sample:0" });
    expect(byKind("RequestFailedResponse")).toEqual({ error: "data[0]: too long for the model", category: "user" });
  });

  test("failed-future categories are the SDK's RequestErrorCategory values", () => {
    expect([...REQUEST_ERROR_CATEGORIES].sort()).toEqual([...made.error_categories].sort());
  });

  test("an error body's field shows in the str() of the SDK's APIStatusError", () => {
    read.status_errors.forEach((r, i) => expect(r.error, JSON.stringify(errors[i])).toBeUndefined());
    const [image, zod, missing, gone] = read.status_errors.map((r) => r.ok!);
    expect(image!.class).toBe("BadRequestError");
    expect(image!.str).toContain("Error code: 400");
    expect(image!.str).toContain("data[3].model_input[1]: image chunks are not served");
    expect(zod!.class).toBe("BadRequestError");
    expect(zod!.str).toContain("prompt.chunks[0].tokens[1]: ");
    expect(zod!.str).toContain("(and 1 more)");
    expect(missing!.class).toBe("NotFoundError");
    expect(missing!.str).toContain("session_id: no session sess-9");
    expect(gone!.class).toBe("APIStatusError");
    expect(errors[0]!.headers["x-should-retry"]).toBe("false");
  });
});
