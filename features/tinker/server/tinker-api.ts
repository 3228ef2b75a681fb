/**
 * The Tinker API (the `tinker` SDK 0.38.0's training and sampling clients) at /api/tinker: every route the
 * SDK calls is under /api/v1. What a training + sampling loop calls is served; anything else answers the
 * SDK's error shape naming what is not supported (docs/tinker.md lists both).
 *
 *   GET  healthz, get_server_capabilities, samplers/{id}
 *   POST client/config, client/dynamic_config       flags: serial forward_backward chunks, no compression,
 *                                                    httpx transport, per-request futures
 *   POST create_session, session_heartbeat, telemetry
 *   POST create_model → future                      a run of kind tinker (tinker-models.ts)
 *   POST get_info, weights_info
 *   POST forward_backward (protobuf) → future       forward too (forward_only); tinker-train.ts
 *   POST optim_step, save_weights, save_weights_for_sampler, load_weights → future
 *   POST create_sampling_session, asample → future  tinker-sample.ts
 *   POST retrieve_future                            the SDK's poll: try_again, the result, or the failure
 *   GET|HEAD /hf/<base model>/resolve/<rev>/<file>  the tokenizer in the hub's file protocol (tinker-hub.ts)
 *
 * Authorized as /api/v1 (requireAccess): the SDK sends its api_key as X-API-Key, and insists it starts with
 * "tml-", so a Rollbook token is passed as `tml-<rbk_… token>` (the prefix is dropped here); member to train
 * or sample, viewer to read. A model of another workspace is unknown. Bodies are capped (the "tinker" door).
 */
import type { ZodError } from "zod";
import type { Role } from "@contracts/roles";
import { requireAccess, type RequestAccess } from "@/server/auth/request";
import { capOf, readCappedBody } from "@/server/http/body-limit";
import { readJsonBody } from "@/server/http/json-body";
import type { Db } from "@/server/db-types";
import { servedModels } from "@/features/runners/server";
import * as W from "../wire";
import { decodeForwardBackwardRequest, encodeForwardBackwardOutput, encodeSampleResponse, TinkerWireError } from "../wire";
import { awaitFuture, startFuture, TinkerUserError, type FutureResult } from "./tinker-futures";
import { activeTinkerRun, createSession, createTinkerModel, findTinkerRun, touchSession } from "./tinker-models";
import { parseSamplingSession, samplingSessionId } from "./tinker-paths";
import { sample, samplerBaseModel, samplerOf } from "./tinker-sample";
import { forwardBackward, loadState, optimStep, resolveWeights, saveWeights } from "./tinker-train";
import { handleHubRequest } from "./tinker-hub";
import { recordLog } from "./tinker-record";

/** An error answer the SDK shows its user (wire/schemas.ts tinkerErrorBody: `detail` names the field). */
function tinkerError(status: number, message: string, field: string | null = null): Response {
  const e = W.tinkerErrorBody(status, message, field ?? undefined);
  return Response.json(e.body, { status: e.status, headers: e.headers });
}

export const SERVED_SDK_VERSION = "0.38.0";

/** How long a retrieve_future poll is held open for its future to settle (the SDK's own poll timeout is 45 s). */
const POLL_HOLD_MS = 40_000;

/** The SDK's api_key ("tml-" + a Rollbook API token) as the bearer requireAccess reads. */
function withBearer(req: Request): Request {
  const headers = new Headers(req.headers);
  const key = headers.get("x-api-key");
  if (key && !headers.has("authorization")) headers.set("authorization", `Bearer ${key.startsWith("tml-") ? key.slice(4) : key}`);
  // The same method and headers, no body (requireAccess reads none; the handler reads the original's).
  return new Request(req.url, { method: req.method, headers });
}

async function access(req: Request, role: Role, db?: Db): Promise<RequestAccess | Response> {
  const a = await requireAccess(withBearer(req), role, { db });
  if (!(a instanceof Response)) return a;
  const body = (await a.json().catch(() => null)) as { error?: { message?: string } } | null;
  return tinkerError(a.status, body?.error?.message ?? `HTTP ${a.status}`);
}

type Parsed<T> = { ok: true; value: T } | { ok: false; res: Response };

async function json<T>(req: Request, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: ZodError } }): Promise<Parsed<T>> {
  const read = await readJsonBody(req, capOf("tinker"));
  if (!read.ok) {
    const field = read.path && read.path.length ? read.path.join(".") : null;
    return { ok: false, res: tinkerError(read.status, field ? `${field}: ${read.message}` : read.message, field) };
  }
  const parsed = schema.safeParse(read.value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const e = W.tinkerErrorFromZod(parsed.error);
  return { ok: false, res: Response.json(e.body, { status: e.status, headers: e.headers }) };
}

const future = (a: RequestAccess, work: () => Promise<FutureResult>, extra: { model_id?: string; sample_sequence_ids?: string[] } = {}) => Response.json(W.untypedApiFuture(startFuture(a.workspaceId, work), extra));

/** A failure thrown synchronously in a handler (before a future) is the same error the future would carry. */
function userError(e: unknown): Response {
  if (e instanceof TinkerUserError) return tinkerError(400, e.message, e.field);
  if (e instanceof TinkerWireError) return tinkerError(400, e.message, e.field);
  throw e;
}

/** Who creates a model: the workspace, the user and the token the request came with. */
async function callerOf(a: RequestAccess) {
  const ws = await a.db.workspace.findUniqueOrThrow({ where: { id: a.workspaceId }, select: { slug: true } });
  const token = a.tokenId ? await a.db.apiToken.findUnique({ where: { id: a.tokenId }, select: { name: true } }) : null;
  return { workspaceId: a.workspaceId, workspaceSlug: ws.slug, userId: a.user.id, tokenId: a.tokenId, tokenName: token?.name ?? null };
}

async function createModel(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const body = await json(req, W.CreateModelRequest);
  if (!body.ok) return body.res;
  const b = body.value;
  const session = touchSession(a.workspaceId, b.session_id);
  const caller = await callerOf(a);
  return future(a, async () => {
    const run = await createTinkerModel(a.db, caller, { baseModel: b.base_model, loraRank: b.lora_config?.rank ?? 32, seed: b.lora_config?.seed ?? null, userMetadata: b.user_metadata ?? {}, session });
    // What the LoRA covers is Rollbook's (every attention and MLP projection), whatever the client asked: said on the run.
    const asked = b.lora_config ? Object.entries({ train_mlp: b.lora_config.train_mlp, train_attn: b.lora_config.train_attn, train_unembed: b.lora_config.train_unembed }).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${String(v)}`) : [];
    await recordLog(a.db, run.id, "info", `Tinker model on ${run.baseModel}, LoRA rank ${run.loraRank} on every attention and MLP projection${asked.length ? ` (the client asked ${asked.join(", ")}; the unembedding is never trained and the projections always are)` : ""}`);
    return { json: W.createModelResponse(run.id) };
  });
}

async function getInfo(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "viewer", db);
  if (a instanceof Response) return a;
  const body = await json(req, W.GetInfoRequest);
  if (!body.ok) return body.res;
  const run = await findTinkerRun(a.db, a.workspaceId, body.value.model_id);
  if (!run) return tinkerError(404, `model_id: model ${body.value.model_id} not found`, "model_id");
  // The id asked by: a model a load created is called by the id the SDK derived for it.
  return Response.json(W.getInfoResponse({ model_id: body.value.model_id, base_model: run.baseModel, lora_rank: run.loraRank, tokenizer_id: run.baseModel }));
}

async function capabilities(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "viewer", db);
  if (a instanceof Response) return a;
  const models = await servedModels(a.db, a.workspaceId);
  return Response.json(W.getServerCapabilitiesResponse((models ?? []).map((m) => ({ model_name: m, trainable: true, sampleable: true }))));
}

/** The training calls: each one's model must be an active Tinker model of the workspace. */
async function trainingCall(req: Request, route: string, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  try {
    if (route === "forward_backward") {
      const type = req.headers.get("content-type") ?? "";
      if (!type.includes("application/x-protobuf")) return tinkerError(415, "forward_backward: send the SDK's protobuf body (Content-Type: application/x-protobuf)", "content-type");
      if (req.headers.get("content-encoding")) return tinkerError(415, `content-encoding: ${req.headers.get("content-encoding")} is not accepted (client/config says proto_compress_fwdbwd false)`, "content-encoding");
      const read = await readCappedBody(req, capOf("tinker"));
      if (!read.ok) return tinkerError(read.status, read.message);
      const fb = decodeForwardBackwardRequest(read.bytes);
      const run = await activeTinkerRun(a.db, a.workspaceId, fb.model_id);
      return future(a, async () => {
        const out = await forwardBackward(a.db, a.workspaceId, run, { lossFn: fb.loss_fn, lossFnConfig: fb.loss_fn_config, data: fb.data, forwardOnly: fb.forward_only });
        return {
          proto: encodeForwardBackwardOutput({
            loss_fn_output_type: "TensorData",
            loss_fn_outputs: out.loss_fn_outputs.map((o) => ({ logprobs: { dtype: "float32", values: o.logprobs }, elementwise_loss: { dtype: "float32", values: o.elementwise_loss } })),
            metrics: out.metrics,
          }),
        };
      }, { model_id: run.id });
    }
    if (route === "optim_step") {
      const body = await json(req, W.OptimStepRequest);
      if (!body.ok) return body.res;
      const run = await activeTinkerRun(a.db, a.workspaceId, body.value.model_id);
      const p = body.value.adam_params ?? body.value.optim_params;
      if (!p || "type" in p) return tinkerError(400, "only Adam is served (AdamParams); other optimizer families are not", "optimizer_params");
      return future(a, async () => ({ json: W.optimStepResponse(await optimStep(a.db, a.workspaceId, run, { learning_rate: p.learning_rate, beta1: p.beta1, beta2: p.beta2, eps: p.eps, weight_decay: p.weight_decay, grad_clip_norm: p.grad_clip_norm })) }), { model_id: run.id });
    }
    if (route === "save_weights" || route === "save_weights_for_sampler") {
      const body = route === "save_weights" ? await json(req, W.SaveWeightsRequest) : await json(req, W.SaveWeightsForSamplerRequest);
      if (!body.ok) return body.res;
      const b = body.value as { model_id: string; path?: string | null; kind?: string; overwrite?: boolean };
      if (b.kind === "inflight") return tinkerError(400, 'kind: "inflight" sampling clients are not served; use the default "snapshot"', "kind");
      const run = await activeTinkerRun(a.db, a.workspaceId, b.model_id);
      const kind = route === "save_weights" ? "state" : "sampler";
      return future(a, async () => {
        const saved = await saveWeights(a.db, a.workspaceId, run, kind, b.path ?? null, kind === "sampler" || b.overwrite === true);
        if (kind === "state") return { json: W.saveWeightsResponse(saved.path ?? `tinker://${run.id}/weights/${saved.step}`) };
        return { json: W.saveWeightsForSamplerResponse(saved.path ? { path: saved.path, sampling_session_id: saved.samplingSessionId } : { sampling_session_id: saved.samplingSessionId }) };
      }, { model_id: run.id });
    }
    // load_weights: into a model, or a model created by the load (the SDK's create_training_client_from_state).
    const body = await json(req, W.LoadWeightsRequest);
    if (!body.ok) return body.res;
    const b = body.value;
    if (!b.model_id) {
      // create_training_client_from_state: the load creates its model, whose id the SDK derives itself
      // (`<session>:train:<seq>`); the run answers to it (Run.artClient.modelId) and takes the state's base model and rank.
      if (!b.session_id || b.model_seq_id === null || b.model_seq_id === undefined) return tinkerError(400, "model_id: required, or session_id and model_seq_id for a load that creates its model", "model_id");
      const alias = `${b.session_id}:train:${b.model_seq_id}`;
      const source = await resolveWeights(a.db, a.workspaceId, b.path, "path");
      const sourceRun = await findTinkerRun(a.db, a.workspaceId, source.runId);
      const caller = await callerOf(a);
      const session = touchSession(a.workspaceId, b.session_id);
      return future(a, async () => {
        const run = await createTinkerModel(a.db, caller, { baseModel: b.base_model ?? source.baseModel, loraRank: sourceRun?.loraRank ?? 8, seed: null, userMetadata: b.user_metadata ?? {}, session, modelId: alias });
        await loadState(a.db, a.workspaceId, run, b.path, b.optimizer);
        return { json: W.loadWeightsResponse({ path: b.path, model_id: alias }) };
      }, { model_id: alias });
    }
    const run = await activeTinkerRun(a.db, a.workspaceId, b.model_id);
    return future(a, async () => {
      await loadState(a.db, a.workspaceId, run, b.path, b.optimizer);
      return { json: W.loadWeightsResponse({ path: b.path, model_id: run.id }) };
    }, { model_id: run.id });
  } catch (e) {
    return userError(e);
  }
}

async function createSamplingSession(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const body = await json(req, W.CreateSamplingSessionRequest);
  if (!body.ok) return body.res;
  try {
    const target = await samplerOf(a.db, a.workspaceId, body.value);
    return Response.json(W.createSamplingSessionResponse(samplingSessionId(target)));
  } catch (e) {
    return userError(e);
  }
}

async function asample(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const body = await json(req, W.SampleRequest);
  if (!body.ok) return body.res;
  const b = body.value;
  try {
    const unserved = W.unservedSampleFields(b)[0];
    if (unserved) return tinkerError(400, unserved.message, unserved.field);
    const promptTokens = b.prompt.chunks.flatMap((c) => (c.type === "encoded_text" ? c.tokens : []));
    const target = await samplerOf(a.db, a.workspaceId, b);
    const p = b.sampling_params;
    if (Array.isArray(p.stop) && p.stop.length === 0) return tinkerError(400, "[] (no stop at all, EOS included) is not served: the engine always stops at the model's EOS", "sampling_params.stop");
    const stopList: (string | number)[] = typeof p.stop === "string" ? [p.stop] : (p.stop ?? []);
    const stop = { strings: stopList.filter((s): s is string => typeof s === "string"), tokens: stopList.filter((s): s is number => typeof s === "number") };
    const numSamples = b.num_samples;
    const requestSeq = `${b.sampling_session_id ?? "s"}:${b.seq_id ?? Date.now()}`;
    return future(a, async () => {
      const answer = await sample(a.db, a.workspaceId, target, {
        promptTokens,
        numSamples,
        maxTokens: p.max_tokens ?? null,
        temperature: p.temperature ?? 1,
        topP: p.top_p ?? 1,
        topK: p.top_k ?? -1,
        seed: p.seed ?? null,
        stop: stop.strings,
        stopTokenIds: stop.tokens,
        promptLogprobs: b.prompt_logprobs ?? false,
      });
      return { proto: encodeSampleResponse({ sequences: answer.sequences.map((s) => ({ tokens: s.tokens, logprobs: s.logprobs, stop_reason: s.stop_reason })), prompt_logprobs: answer.prompt_logprobs }) };
    }, { sample_sequence_ids: Array.from({ length: numSamples }, (_, i) => `${requestSeq}:${i}`) });
  } catch (e) {
    return userError(e);
  }
}

async function sampler(req: Request, id: string, db?: Db): Promise<Response> {
  const a = await access(req, "viewer", db);
  if (a instanceof Response) return a;
  try {
    const target = parseSamplingSession(id);
    return Response.json(W.getSamplerResponse({ sampler_id: id, base_model: await samplerBaseModel(a.db, a.workspaceId, target) }));
  } catch (e) {
    if (e instanceof TinkerUserError) return tinkerError(404, e.message, e.field);
    throw e;
  }
}

async function retrieveFuture(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "viewer", db);
  if (a instanceof Response) return a;
  const body = await json(req, W.FutureRetrieveRequest);
  if (!body.ok) return body.res;
  const f = await awaitFuture(a.workspaceId, body.value.request_id, POLL_HOLD_MS);
  if (f.state === "unknown") return tinkerError(404, `request_id: unknown request ${body.value.request_id} (it expired, belongs to another workspace, or this web process restarted)`, "request_id");
  if (f.state === "pending") return Response.json(W.tryAgainResponse(body.value.request_id));
  if (f.state === "failed") return Response.json(W.failedFutureResponse(f.message, f.category));
  const wantsProto = (req.headers.get("accept") ?? "").includes("application/x-protobuf");
  if ("proto" in f.result) {
    if (!wantsProto) return tinkerError(406, "this result is protobuf (SampleResponse / ForwardBackwardOutput): send Accept: application/x-protobuf, as the SDK does");
    return new Response(Buffer.from(f.result.proto), { headers: { "content-type": "application/x-protobuf" } });
  }
  return Response.json(f.result.json);
}

async function simple(req: Request, route: string, db?: Db): Promise<Response> {
  const a = await access(req, route === "create_session" ? "member" : "viewer", db);
  if (a instanceof Response) return a;
  if (route === "client/config") return Response.json(W.clientConfigResponse());
  if (route === "client/dynamic_config") return Response.json(W.clientDynamicConfigResponse());
  if (route === "create_session") {
    const body = await json(req, W.CreateSessionRequest);
    if (!body.ok) return body.res;
    return Response.json(W.createSessionResponse(createSession(a.workspaceId, body.value)));
  }
  if (route === "session_heartbeat") {
    const body = await json(req, W.SessionHeartbeatRequest);
    if (!body.ok) return body.res;
    if (!touchSession(a.workspaceId, body.value.session_id)) return tinkerError(404, `session_id: unknown session ${body.value.session_id} (this web process restarted? create a new ServiceClient)`, "session_id");
    return Response.json(W.sessionHeartbeatResponse());
  }
  // telemetry: accepted and dropped (Rollbook keeps its own record of every call on the run).
  await readCappedBody(req, capOf("tinker"));
  return Response.json(W.telemetryResponse());
}

const TRAINING = new Set(["forward_backward", "optim_step", "save_weights", "save_weights_for_sampler", "load_weights"]);
const SIMPLE = new Set(["client/config", "client/dynamic_config", "create_session", "session_heartbeat", "telemetry"]);

/** One Tinker request; `path` is what follows /api/tinker (the catch-all route's segments). `opts.db`: tests. */
export async function handleTinkerRequest(req: Request, path: readonly string[], opts: { db?: Db } = {}): Promise<Response> {
  if (path[0] === "hf") return handleHubRequest(req, withBearer(req), path.slice(1), opts.db);
  const [api, v1, ...rest] = path;
  const route = rest.join("/");
  const m = req.method;
  if (api !== "api" || v1 !== "v1" || !route) return tinkerError(404, `no such Tinker endpoint: /${path.join("/")} (Rollbook serves the SDK's /api/v1 routes: docs/tinker.md)`);
  const db = opts.db;
  if (m === "GET") {
    if (route === "healthz") return Response.json({ status: "ok" });
    if (route === "get_server_capabilities") return capabilities(req, db);
    if (rest[0] === "samplers" && rest.length === 2) return sampler(req, rest[1]!, db);
  } else if (m === "POST") {
    if (SIMPLE.has(route)) return simple(req, route, db);
    if (TRAINING.has(route)) return trainingCall(req, route, db);
    if (route === "create_model") return createModel(req, db);
    if (route === "get_info") return getInfo(req, db);
    if (route === "create_sampling_session") return createSamplingSession(req, db);
    if (route === "asample") return asample(req, db);
    if (route === "retrieve_future") return retrieveFuture(req, db);
  }
  return tinkerError(501, `${m} /api/v1/${route} is not served by Rollbook's Tinker door (served: training and sampling clients; docs/tinker.md)`);
}
