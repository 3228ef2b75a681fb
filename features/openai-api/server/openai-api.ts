/**
 * The OpenAI-compatible API users point the official SDKs at (app/api/v1/…):
 *
 *   POST /api/v1/chat/completions   model: "<run number>@<step>", "<run id>@<step>", "<run number>@best" (the
 *                                   run's best-validated checkpoint) or a base model name;
 *                                   plain JSON or `stream: true` (server-sent events, passed through)
 *   GET  /api/v1/models             the workspace's checkpoints as "<number>@<step>", each run's "<number>@best"
 *                                   (root: the checkpoint it serves now), plus its base models
 *
 * Authorized as any web API call (requireAccess: an API token `Authorization: Bearer rbk_…`, or the browser
 * session), acting in the token's workspace; a model outside it is 404, never a hint that it exists.
 * The request goes web → runner (bearer RUNNER_TOKEN) → engine; the engine is never reachable from here.
 * Errors use OpenAI's shape, {"error": {message, type, param, code}}, so the SDKs raise their usual classes.
 * The answer's `model` is the name the caller sent, not the runner's internal one.
 */
import { bestModelName, type ChatCompletionRequest, checkpointModelName, formatZodIssues, ValidChatCompletionRequest } from "@contracts";
import { requireAccess } from "@/server/auth/request";
import { isAppError, rootMessage } from "@/server/errors";
import { bestCheckpoints, errorMessage, forwardChat, resolveModel, type ResolvedModel } from "@/features/checkpoints/server";
import { servedModels } from "@/features/runners/server";
import type { Db } from "@/server/db-types";
import { renameModelInEvents } from "./sse-model-name";
import { unsupportedField } from "./request-fields";
import { apiTenant, RequestDeadline, tokenBudget } from "./api-limits";
import { env } from "@/server/env";
import { capOf, REFUSAL_HEADERS } from "@/server/http/body-limit";
import { readJsonBody } from "@/server/http/json-body";
import { formatTextPath } from "@contracts/text-rules";

/** `n` is capped for this public door: 256 completions of one request would hold a shared runner for long. */
export const MAX_CHOICES = 8;
const MAX_LISTED_CHECKPOINTS = 2_000;

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "invalid_request_error",
};

export function openaiError(status: number, message: string, param: string | null = null, code: string | null = null): Response {
  const headers: Record<string, string> = status === 401 ? { "www-authenticate": 'Bearer realm="rollbook"' } : status === 413 ? { ...REFUSAL_HEADERS } : {};
  return Response.json({ error: { message, type: TYPE_BY_STATUS[status] ?? (status >= 500 ? "server_error" : "invalid_request_error"), param, code } }, { status, headers });
}

/** requireAccess answers {error: {message}}; OpenAI clients also read type and code. */
async function accessOrError(req: Request, db?: Db) {
  const access = await requireAccess(req, "viewer", { db });
  if (!(access instanceof Response)) return access;
  return openaiError(access.status, await errorMessage(access));
}

function appErrorResponse(e: unknown): Response {
  if (!isAppError(e)) throw e;
  const status = { NOT_FOUND: 404, BAD_INPUT: 400, RUNNER_UNAVAILABLE: 503, RUNNER_ERROR: 502, FORBIDDEN: 403, UNAUTHORIZED: 401, CONFLICT: 409 }[e.code];
  return openaiError(status, e.message, e.code === "NOT_FOUND" ? "model" : null, e.code === "NOT_FOUND" ? "model_not_found" : null);
}

/**
 * The body as JSON: counted while it streams and refused past the chat cap (body-limit.ts), and refused
 * when nested deeper than MAX_JSON_DEPTH (forwarding it to the runner stringifies it, recursively).
 */
/** The body, checked before any schema sees it (NUL, NaN, `__proto__`: server/http/json-body.ts), or the 4xx naming the field. */
async function readJson(req: Request): Promise<{ ok: true; value: unknown } | { ok: false; res: Response }> {
  const read = await readJsonBody(req, capOf("chat"));
  if (read.ok) return read;
  const param = read.path && read.path.length > 0 ? formatTextPath(read.path) : null;
  return { ok: false, res: openaiError(read.status, param ? `${param}: ${read.message}` : read.message, param) };
}

/** What a door that serves chat completions may do differently (the ART door: features/art/server/art-sampling.ts). */
export interface ChatDoorOptions {
  db?: Db;
  /** The caller's model name → what the runner serves; default: resolveModel (`<run>@<step>`, a base model). */
  resolve?: (db: Db, workspaceId: string, model: string) => Promise<ResolvedModel>;
  /** The checked body → the body forwarded to the runner; default: as it is. */
  prepare?: (body: ChatCompletionRequest) => ChatCompletionRequest;
}

export async function handleChatCompletions(req: Request, opts: ChatDoorOptions = {}): Promise<Response> {
  const access = await accessOrError(req, opts.db);
  if (access instanceof Response) return access;
  const body = await readJson(req);
  if (!body.ok) return body.res;
  const unsupported = unsupportedField(body.value);
  if (unsupported) return openaiError(400, unsupported.message, unsupported.param);
  // The shape and the rules between fields are checked here too, so a bad field is named at once.
  const parsed = ValidChatCompletionRequest.safeParse(body.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const param = issue.path.map(String).join(".") || null;
    return openaiError(400, formatZodIssues(parsed.error, "", "body")[0]!, param);
  }
  if ((parsed.data.n ?? 1) > MAX_CHOICES) return openaiError(400, `n: at most ${MAX_CHOICES} here`, "n");
  const tokens = tokenBudget(parsed.data, env());
  if (!tokens.ok) return openaiError(400, tokens.message, tokens.param);
  const requested = parsed.data.model;

  // The request's deadline (api-deadline.ts): a 504 that says what happened, before the runner call's own limit.
  const deadline = new RequestDeadline(env().API_REQUEST_DEADLINE_S, tokens.maxTokens);
  const signal = AbortSignal.any([req.signal, deadline.signal]);
  let upstream: Response;
  try {
    const resolved = await (opts.resolve ?? resolveModel)(access.db, access.workspaceId, requested);
    // The parsed body: the accepted fields without effect (`store`, `metadata`…) are dropped (request-fields.ts).
    const checked = { ...parsed.data, max_tokens: tokens.maxTokens, max_completion_tokens: undefined, user: apiTenant(access.workspaceId, parsed.data.user) };
    const forwarded = opts.prepare ? opts.prepare(checked) : checked;
    upstream = await forwardChat(access.db, access.workspaceId, resolved, forwarded, signal);
  } catch (e) {
    deadline.clear();
    return failedCall(e, req, deadline);
  }
  if (!upstream.ok) {
    deadline.clear();
    return upstreamError(upstream);
  }
  const type = upstream.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream") && upstream.body) {
    // A stream answers at once and is bounded by its max_tokens; the deadline was for its first byte.
    deadline.clear();
    return new Response(upstream.body.pipeThrough(renameModelInEvents(requested)), {
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" },
    });
  }
  try {
    const json = (await upstream.json()) as Record<string, unknown>;
    return Response.json({ ...json, model: requested });
  } catch (e) {
    return failedCall(e, req, deadline);
  } finally {
    deadline.clear();
  }
}

/** The engine's (or runner's) error as the caller's, its param and code kept: a client names the field from them. */
async function upstreamError(res: Response): Promise<Response> {
  const text = await res.text().catch(() => "");
  let error: { message?: unknown; param?: unknown; code?: unknown } | undefined;
  try {
    error = (JSON.parse(text) as { error?: typeof error }).error;
  } catch {
    // not JSON: the text is the message
  }
  const message = typeof error?.message === "string" ? error.message : text.slice(0, 300) || `HTTP ${res.status}`;
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  return openaiError(res.status, message, str(error?.param), str(error?.code));
}

/** The answer when the call to the runner threw: the caller left, the deadline passed, or the runner's error. */
function failedCall(e: unknown, req: Request, deadline: RequestDeadline): Response {
  if (req.signal.aborted) return new Response(null, { status: 499 });
  if (deadline.passed) return openaiError(504, deadline.message(), null, "generation_deadline_exceeded");
  if (e instanceof Error && e.name === "TimeoutError") return openaiError(504, `the model did not answer in time: ${rootMessage(e)}`);
  return appErrorResponse(e);
}

export async function handleModels(req: Request, opts: { db?: Db } = {}): Promise<Response> {
  const access = await accessOrError(req, opts.db);
  if (access instanceof Response) return access;
  const { db, workspaceId } = access;
  const [bases, checkpoints] = await Promise.all([
    servedModels(db, workspaceId).then((served) => served ?? []),
    db.checkpoint.findMany({
      where: { run: { workspaceId } },
      orderBy: [{ createdAt: "desc" }],
      take: MAX_LISTED_CHECKPOINTS,
      select: { step: true, createdAt: true, run: { select: { id: true, number: true, baseModel: true } } },
    }),
  ]);
  // `<run number>@best` beside each listed run's checkpoints, for the runs whose evals scored one.
  const runs = new Map(checkpoints.map((c) => [c.run.id, c.run]));
  const bests = await bestCheckpoints(db, [...runs.keys()]);
  const now = Math.floor(Date.now() / 1000);
  const data = [
    ...bases.map((id) => ({ id, object: "model", created: now, owned_by: "rollbook" })),
    ...checkpoints.map((c) => ({
      id: checkpointModelName(c.run.number, c.step),
      object: "model",
      created: Math.floor(c.createdAt.getTime() / 1000),
      owned_by: "rollbook",
      parent: c.run.baseModel,
    })),
    ...[...bests].map(([runId, best]) => {
      const run = runs.get(runId)!;
      // `root`: the checkpoint the alias serves now (OpenAI's Model has `root` for what a name points at).
      return { id: bestModelName(run.number), object: "model", created: now, owned_by: "rollbook", parent: run.baseModel, root: checkpointModelName(run.number, best.step), validation_reward: best.reward };
    }),
  ];
  return Response.json({ object: "list", data });
}
