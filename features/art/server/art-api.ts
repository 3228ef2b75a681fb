/**
 * The OpenPipe ART API (models, logged trajectory groups, sampling), relative to /api/art/v1, what
 * `art.ServerlessBackend(base_url=…, api_key=…)`, `art.serverless.client.Client` and `model.openai_client()` call:
 *
 *   POST   /preview/models                         create (or, return_existing, find) a model: a run of kind "art"
 *   DELETE /preview/models/{id}                    end the run "stopped" (its history stays)
 *   POST   /preview/models/{id}/log                trajectory groups: "train" → one step, "val" → an eval (art-log.ts)
 *   GET    /preview/models/{id}/checkpoints        the run's checkpoints, ART's cursor pages (none for log-only runs)
 *   DELETE /preview/models/{id}/checkpoints        (art-checkpoints.ts)
 *   POST   /chat/completions                       sampling: /api/v1's chat with ART's model names (art-sampling.ts)
 *   POST   /preview/training-jobs                  one GRPO step of the model's run on its runner → {id} (art-training-jobs.ts)
 *   GET    /preview/training-jobs/{id}/events      the job's events, ART's cursor pages
 *   sft-training-jobs                              501: supervised fine-tuning is not supported (docs/art.md)
 *
 * Authorized exactly as /api/v1 (requireAccess: the workspace's API tokens `rbk_…`, or a session); member
 * to write, viewer to read. A model of another workspace is 404. Errors in OpenAI's shape, naming the field.
 * Bodies are capped at MAX_ART_REQUEST_BYTES (server/http/body-limit.ts, the "art" door).
 */
import { findPrototypeKey, PROTOTYPE_KEYS, prototypeKeyMessage } from "@contracts";
import type { Role } from "@contracts/roles";
import { requireAccess, type RequestAccess } from "@/server/auth/request";
import { capOf } from "@/server/http/body-limit";
import { readJsonBody } from "@/server/http/json-body";
import type { Db } from "@/server/db-types";
import { CheckpointListQuery, CreateModelBody, DeleteCheckpointsBody, LogBody, TrainingJobBody, TrainingJobEventsQuery } from "../schema";
import { createTrainingJob, listJobEvents } from "./art-training-jobs";
import { artError, badBody, fieldPath } from "./art-errors";
import { deleteCheckpoints, listCheckpoints } from "./art-checkpoints";
import { openai3Problem } from "./art-client-versions";
import { endRun, logGroups } from "./art-log";
import { clientCalled, createArtModel, findArtRun, type ArtRun } from "./art-models";
import { handleArtChat } from "./art-sampling";

async function access(req: Request, role: Role, db?: Db): Promise<RequestAccess | Response> {
  const a = await requireAccess(req, role, { db });
  if (!(a instanceof Response)) return a;
  const body = (await a.json().catch(() => null)) as { error?: { message?: string } } | null;
  return artError(a.status, body?.error?.message ?? `HTTP ${a.status}`);
}

/** The body, checked before any schema sees it (NUL, NaN, `__proto__`: server/http/json-body.ts), or the 4xx naming the field. */
async function readJson(req: Request): Promise<{ ok: true; value: unknown } | { ok: false; res: Response }> {
  const read = await readJsonBody(req, capOf("art"));
  if (read.ok) return read;
  const param = read.path && read.path.length > 0 ? fieldPath(read.path) : null;
  return { ok: false, res: artError(read.status, param ? `${param}: ${read.message}` : read.message, param) };
}

const notFound = (id: string) => artError(404, `model ${id} not found`, "model_id", "model_not_found");

/** The workspace's active ART model, or the 404 ART's client raises NotFoundError for (a deleted one included). */
async function activeModel(a: RequestAccess, id: string): Promise<ArtRun | Response> {
  const run = await findArtRun(a.db, a.workspaceId, id);
  if (!run) return notFound(id);
  if (run.status !== "running" && run.status !== "lost") return artError(404, `model ${id} was deleted (its run is ${run.status}; its history stays in Rollbook)`, "model_id", "model_not_found");
  return run;
}

async function createModel(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const body = await readJson(req);
  if (!body.ok) return body.res;
  const parsed = CreateModelBody.safeParse(body.value);
  if (!parsed.success) return badBody(parsed.error);
  const { project, name, entity } = parsed.data;
  if (!project) return artError(400, "project: required (the model's project: a Rollbook experiment of that name)", "project");
  if (!name) return artError(400, "name: required (the model's name: one run in the project)", "name");
  const ws = await a.db.workspace.findUniqueOrThrow({ where: { id: a.workspaceId }, select: { slug: true } });
  if (entity && entity !== ws.slug && entity !== a.workspaceId) {
    return artError(400, `entity: this token acts in workspace '${ws.slug}': use that as the entity, or leave it out`, "entity");
  }
  const token = a.tokenId ? await a.db.apiToken.findUnique({ where: { id: a.tokenId }, select: { name: true } }) : null;
  const out = await createArtModel(
    a.db,
    { workspaceId: a.workspaceId, workspaceSlug: ws.slug, userId: a.user.id, tokenId: a.tokenId, tokenName: token?.name ?? null },
    { ...parsed.data, project, name },
  );
  if (!out.ok) return artError(out.status, out.message, out.param);
  return Response.json(out.model, { status: out.created ? 201 : 200 });
}

async function deleteModel(req: Request, id: string, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const run = await findArtRun(a.db, a.workspaceId, id);
  if (!run) return notFound(id);
  // Deleting twice is deleting: the run ended the first time.
  if (run.status === "running" || run.status === "lost") await endRun(a.db, run.id);
  return Response.json(null);
}

async function log(req: Request, id: string, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const run = await activeModel(a, id);
  if (run instanceof Response) return run;
  const body = await readJson(req);
  if (!body.ok) return body.res;
  const parsed = LogBody.safeParse(body.value);
  if (!parsed.success) return badBody(parsed.error);
  if (parsed.data.model_id !== undefined && parsed.data.model_id !== id) return artError(400, `model_id: ${parsed.data.model_id} is not the model of this path (${id})`, "model_id");
  await clientCalled(a.db, run);
  await logGroups(a.db, run, parsed.data);
  return Response.json(null);
}

async function checkpoints(req: Request, id: string, db?: Db): Promise<Response> {
  const isDelete = req.method === "DELETE";
  const a = await access(req, isDelete ? "member" : "viewer", db);
  if (a instanceof Response) return a;
  const run = await activeModel(a, id);
  if (run instanceof Response) return run;
  await clientCalled(a.db, run);
  if (!isDelete) {
    const url = new URL(req.url);
    const q = CheckpointListQuery.safeParse(Object.fromEntries(url.searchParams));
    if (!q.success) return badBody(q.error);
    return Response.json(await listCheckpoints(a.db, run.id, q.data));
  }
  const body = await readJson(req);
  if (!body.ok) return body.res;
  const parsed = DeleteCheckpointsBody.safeParse(body.value);
  if (!parsed.success) return badBody(parsed.error);
  const out = await deleteCheckpoints(a.db, run.id, parsed.data.steps);
  if (!out.ok) return artError(400, out.message, "steps");
  return Response.json({ deleted_count: out.deleted_count, not_found_steps: out.not_found_steps, deferred_steps: out.deferred_steps });
}

async function trainingJob(req: Request, db?: Db): Promise<Response> {
  const a = await access(req, "member", db);
  if (a instanceof Response) return a;
  const body = await readJson(req);
  if (!body.ok) return body.res;
  // Merged onto the run's trainer settings: no key there may name a prototype (contracts/json-keys.ts).
  const config = typeof body.value === "object" && body.value !== null ? (body.value as { experimental_config?: unknown }).experimental_config : undefined;
  const proto = findPrototypeKey(config, PROTOTYPE_KEYS);
  if (proto) {
    const param = fieldPath(["experimental_config", ...proto]);
    return artError(400, `${param}: ${prototypeKeyMessage(String(proto.at(-1)))}`, param);
  }
  const parsed = TrainingJobBody.safeParse(body.value);
  if (!parsed.success) return badBody(parsed.error);
  const run = await activeModel(a, parsed.data.model_id);
  if (run instanceof Response) return run;
  await clientCalled(a.db, run);
  const out = await createTrainingJob(a.db, a.workspaceId, run, parsed.data);
  if (!out.ok) return artError(out.status, out.message, out.param ?? undefined);
  return Response.json({ id: out.id }, { status: 201 });
}

async function trainingJobEvents(req: Request, id: string, db?: Db): Promise<Response> {
  const a = await access(req, "viewer", db);
  if (a instanceof Response) return a;
  const q = TrainingJobEventsQuery.safeParse(Object.fromEntries(new URL(req.url).searchParams));
  if (!q.success) return badBody(q.error);
  const page = await listJobEvents(a.db, a.workspaceId, id, q.data);
  return page ? Response.json(page) : artError(404, `training job ${id} not found`, "training_job_id");
}

/**
 * ART's model.train_sft: not done here (docs/art.md, "Supervised fine-tuning"). A Rollbook step is a GRPO step
 * on sampled rollouts; the message says what to do instead.
 */
const SFT_NOT_SUPPORTED =
  "supervised fine-tuning (model.train_sft) is not supported by Rollbook: it trains RL steps (backend.train). " +
  "To start RL from a fine-tuned model, run SFT elsewhere (TRL's SFTTrainer, ART's LocalBackend), merge it, serve " +
  "the merged model as the runner's base model (ENGINE_MODEL) and register this ART model with that base_model; " +
  "or train the same examples as RL with a reward that scores closeness to them (docs/art.md, Supervised fine-tuning)";

/**
 * One ART request; `path` is what follows /api/art/v1 (the catch-all route's segments). `opts.db`: tests.
 * Unknown paths are 404, known ones with another method 405.
 */
export async function handleArtRequest(req: Request, path: readonly string[], opts: { db?: Db } = {}): Promise<Response> {
  const [p0, p1, id, p3, ...rest] = path;
  const m = req.method;
  if (p0 === "chat" && p1 === "completions" && id === undefined) return m === "POST" ? handleArtChat(req, opts.db) : artError(405, `${m} /chat/completions: use POST`);
  if (p0 !== "preview") return artError(404, `no such ART endpoint: /${path.join("/")}`);
  const clientProblem = openai3Problem(req);
  if (clientProblem) return artError(400, clientProblem);
  if (p1 === "sft-training-jobs") return artError(501, SFT_NOT_SUPPORTED);
  if (p1 === "training-jobs") {
    if (id === undefined && rest.length === 0) return m === "POST" ? trainingJob(req, opts.db) : artError(405, `${m} /preview/training-jobs: use POST`);
    if (id !== undefined && p3 === "events" && rest.length === 0) return m === "GET" ? trainingJobEvents(req, id, opts.db) : artError(405, `${m} /preview/training-jobs/{id}/events: use GET`);
    return artError(404, `no such ART endpoint: /${path.join("/")}`);
  }
  if (p1 !== "models" || rest.length > 0) return artError(404, `no such ART endpoint: /${path.join("/")}`);
  if (id === undefined) return m === "POST" ? createModel(req, opts.db) : artError(405, `${m} /preview/models: use POST`);
  if (p3 === undefined) return m === "DELETE" ? deleteModel(req, id, opts.db) : artError(405, `${m} /preview/models/{id}: use DELETE`);
  if (p3 === "log") return m === "POST" ? log(req, id, opts.db) : artError(405, `${m} /preview/models/{id}/log: use POST`);
  if (p3 === "checkpoints") return m === "GET" || m === "DELETE" ? checkpoints(req, id, opts.db) : artError(405, `${m} /preview/models/{id}/checkpoints: use GET or DELETE`);
  return artError(404, `no such ART endpoint: /${path.join("/")}`);
}
