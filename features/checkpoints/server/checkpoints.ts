/**
 * A run's checkpoints as things a user takes away: the list (step, size, the rewards at that step), the
 * PEFT archive from the runner's disk, and chat with a checkpoint (or the base model beside it) through the
 * runner's pass-through to its engine (gpu-runner/src/http/routes.ts).
 *
 * Names: the engine knows a checkpoint as `<runner run id>@<step>`; users may also write the run's
 * per-workspace number, `12@3` (what /v1/models lists). resolveModel turns either into the run id, and only
 * for a run of the caller's workspace with that checkpoint stored: anything else is NOT_FOUND, so another
 * workspace's runs cannot even be probed. Nothing a user sends reaches the runner before that.
 */
import {
  bestModelName,
  ChatCompletionResponse,
  checkpointModelName,
  classifyModelName,
  parseBestModelName,
  runNumberOf,
  RUNNER_WORKSPACE_HEADER,
  type ChatMessage,
  type StepMetrics,
} from "@contracts";
import { AppError } from "@/server/errors";
import { resolveRunner, runnerFetch } from "@/server/runner-client";
import { runnersOf, servedModels } from "@/features/runners/server";
import type { DbOrTx } from "@/server/db-types";
import { bestCheckpoint, evalRewardsByStep, pickBest } from "./best-checkpoint";

/** How long one chat call may take through the runner (a CPU engine writes a few dozen tokens a second). */
export const CHAT_TIMEOUT_MS = 300_000;

export interface CheckpointItem {
  step: number;
  /** What to pass as `model` to the OpenAI-compatible endpoint: `<run number>@<step>`. */
  model: string;
  sizeBytes: number;
  createdAt: Date;
  /** Mean validation reward of the run's own eval of this checkpoint (eval.finished), if it ran one. */
  evalReward: number | null;
  /** Mean reward of the training step that produced this checkpoint (its Step metrics). */
  trainReward: number | null;
  /** Asked to be deleted while an active run reads it: it goes when that run ends (checkpoint-holders.ts). */
  deletePending: boolean;
}

export async function listCheckpoints(db: DbOrTx, workspaceId: string, runId: string) {
  const run = await db.run.findFirst({
    where: { id: runId, workspaceId },
    select: {
      id: true,
      number: true,
      baseModel: true,
      checkpoints: { orderBy: { step: "asc" }, select: { step: true, sizeBytes: true, createdAt: true, deleteRequestedAt: true } },
      steps: { select: { step: true, metrics: true } },
    },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  const evalByStep = await evalRewardsByStep(db, run.id);
  const trainByStep = new Map(run.steps.map((s) => [s.step, (s.metrics as unknown as StepMetrics).reward_mean ?? null]));
  const items: CheckpointItem[] = run.checkpoints.map((c) => ({
    step: c.step,
    model: checkpointModelName(run.number, c.step),
    sizeBytes: Number(c.sizeBytes),
    createdAt: c.createdAt,
    evalReward: evalByStep.get(c.step) ?? null,
    trainReward: trainByStep.get(c.step) ?? null,
    deletePending: c.deleteRequestedAt !== null,
  }));
  const best = pickBest(evalByStep, items.map((c) => c.step));
  // `bestModel`: the alias the OpenAI-compatible endpoint serves it under, `<run number>@best`.
  return { runId: run.id, runNumber: run.number, baseModel: run.baseModel, items, best: best && { ...best, model: bestModelName(run.number) } };
}

export type ResolvedModel =
  | { kind: "checkpoint"; runId: string; runNumber: number; step: number; runnerId: string | null; runnerModel: string }
  | { kind: "base"; runnerId: string | null; runnerModel: string };


const notFound = (model: string) => new AppError("NOT_FOUND", `model '${model}' not found in this workspace: use a base model, '<run number>@<step>' or '<run number>@best' (GET /api/v1/models lists them)`);

/**
 * A base model the workspace may chat with → its server: the runner of the workspace's latest run on that
 * model (its engine has it loaded); none yet (a fresh workspace, or only runs without a runner, ART's): a
 * runner of the workspace that says it serves it, else the configured runner.
 */
export async function resolveBaseModel(db: DbOrTx, workspaceId: string, model: string): Promise<ResolvedModel> {
  const latest = await db.run.findFirst({
    where: { workspaceId, baseModel: model, runnerId: { not: null } },
    orderBy: { createdAt: "desc" },
    select: { runnerId: true },
  });
  const serving = latest
    ? null
    : await db.runner.findFirst({ where: { enabled: true, models: { has: model }, ...runnersOf(workspaceId) }, orderBy: { lastSeenAt: { sort: "desc", nulls: "last" } }, select: { id: true } });
  return { kind: "base", runnerId: latest?.runnerId ?? serving?.id ?? null, runnerModel: model };
}

/** `12@best` or `<run id>@best` → the run's best checkpoint, for a run of this workspace only. */
async function resolveBest(db: DbOrTx, workspaceId: string, model: string, runRef: string): Promise<ResolvedModel> {
  const byNumber = runNumberOf(runRef);
  const run = await db.run.findFirst({
    where: byNumber !== null ? { workspaceId, number: byNumber } : { workspaceId, id: runRef },
    select: { id: true, number: true, runnerId: true },
  });
  if (!run) throw notFound(model);
  const best = await bestCheckpoint(db, run.id);
  if (!best) throw new AppError("NOT_FOUND", `model '${model}': run #${run.number} has no checkpoint with a validation eval yet (set eval_every, or name a step: '${run.number}@<step>')`);
  return { kind: "checkpoint", runId: run.id, runNumber: run.number, step: best.step, runnerId: run.runnerId, runnerModel: checkpointModelName(run.id, best.step) };
}

/** `12@3`, `<run id>@3`, `12@best` or a base model name → what the runner serves, for this workspace only. */
export async function resolveModel(db: DbOrTx, workspaceId: string, model: string): Promise<ResolvedModel> {
  const bestOf = parseBestModelName(model);
  if (bestOf !== null) return resolveBest(db, workspaceId, model, bestOf);
  const ref = classifyModelName(model);
  if (ref.kind === "invalid") throw notFound(model);
  if (ref.kind === "base") {
    // What a runner of this workspace serves (never a name some run once typed into config.model).
    if (!((await servedModels(db, workspaceId)) ?? []).includes(model)) throw notFound(model);
    return resolveBaseModel(db, workspaceId, model);
  }
  const byNumber = runNumberOf(ref.run);
  const run = await db.run.findFirst({
    where: byNumber !== null ? { workspaceId, number: byNumber } : { workspaceId, id: ref.run },
    select: { id: true, number: true, runnerId: true, checkpoints: { where: { step: ref.step }, select: { step: true } } },
  });
  if (!run || run.checkpoints.length === 0) throw notFound(model);
  return { kind: "checkpoint", runId: run.id, runNumber: run.number, step: ref.step, runnerId: run.runnerId, runnerModel: checkpointModelName(run.id, ref.step) };
}

/**
 * POST the chat body to the runner that holds the model (a checkpoint: the run's runner; a base model: the
 * configured runner), with `model` rewritten to the runner's name. The runner's response is returned as is
 * (status, JSON or server-sent events), for the caller to pass on.
 */
export async function forwardChat(db: DbOrTx, workspaceId: string, resolved: ResolvedModel, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  const runnerId = resolved.runnerId ?? (resolved.kind === "base" ? (await resolveRunner(db)).id : null);
  if (!runnerId) throw new AppError("RUNNER_UNAVAILABLE", `run #${resolved.kind === "checkpoint" ? resolved.runNumber : "?"} has no runner to serve its checkpoints`);
  const signals = [AbortSignal.timeout(CHAT_TIMEOUT_MS), ...(signal ? [signal] : [])];
  return runnerFetch(db, runnerId, "/v1/chat/completions", {
    method: "POST",
    // The runner checks a checkpoint model against this workspace on its own too (gpu-runner/src/loop/run-owner.ts).
    headers: { "content-type": "application/json", [RUNNER_WORKSPACE_HEADER]: workspaceId },
    body: JSON.stringify({ ...body, model: resolved.runnerModel }),
    signal: AbortSignal.any(signals),
  });
}

/** The message of an OpenAI-shaped error body (the engine's and the runner's), else the text. */
export async function errorMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === "string") return m;
  } catch {
    // not JSON
  }
  return text.slice(0, 300) || `HTTP ${res.status}`;
}

export interface ChatInput {
  runId: string;
  /** null: the run's base model (the other column of the comparison). */
  step: number | null;
  messages: ChatMessage[];
  maxTokens: number;
  temperature: number;
}

/** One reply from a run's checkpoint or its base model, for the run page's chat. */
export async function chatWithRun(db: DbOrTx, workspaceId: string, input: ChatInput) {
  const run = await db.run.findFirst({ where: { id: input.runId, workspaceId }, select: { id: true, number: true, baseModel: true, runnerId: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
  let resolved: ResolvedModel;
  if (input.step === null) {
    resolved = { kind: "base", runnerId: run.runnerId, runnerModel: run.baseModel };
  } else {
    const ckpt = await db.checkpoint.findUnique({ where: { runId_step: { runId: run.id, step: input.step } }, select: { step: true } });
    if (!ckpt) throw new AppError("NOT_FOUND", `step: run #${run.number} has no checkpoint for step ${input.step}`);
    resolved = { kind: "checkpoint", runId: run.id, runNumber: run.number, step: input.step, runnerId: run.runnerId, runnerModel: checkpointModelName(run.id, input.step) };
  }
  const started = Date.now();
  const res = await forwardChat(db, workspaceId, resolved, { messages: input.messages, max_tokens: input.maxTokens, temperature: input.temperature });
  if (!res.ok) {
    const message = await errorMessage(res);
    throw new AppError(res.status === 404 ? "NOT_FOUND" : res.status === 400 ? "BAD_INPUT" : "RUNNER_ERROR", `the runner refused the chat: ${message}`);
  }
  const parsed = ChatCompletionResponse.safeParse(await res.json().catch(() => null));
  if (!parsed.success) throw new AppError("RUNNER_ERROR", "the runner answered the chat with a malformed response");
  const choice = parsed.data.choices[0];
  return {
    model: input.step === null ? run.baseModel : checkpointModelName(run.number, input.step),
    content: choice?.message.content ?? "",
    toolCalls: choice?.message.tool_calls ?? [],
    finishReason: choice?.finish_reason ?? null,
    usage: parsed.data.usage,
    ms: Date.now() - started,
  };
}

/**
 * The runner's archive of a checkpoint of a run in this workspace: its response (a .tar.gz stream) and the
 * file name to offer. NOT_FOUND for a run of another workspace, a step with no checkpoint, or files the
 * runner no longer has.
 */
export async function checkpointArchive(db: DbOrTx, workspaceId: string, runId: string, step: number, signal?: AbortSignal) {
  const ckpt = await db.checkpoint.findFirst({
    where: { runId, step, run: { workspaceId } },
    select: { step: true, run: { select: { id: true, number: true, runnerId: true } } },
  });
  if (!ckpt) throw new AppError("NOT_FOUND", `run ${runId} has no checkpoint for step ${step}`);
  if (!ckpt.run.runnerId) throw new AppError("RUNNER_UNAVAILABLE", `run #${ckpt.run.number} has no runner holding its checkpoints`);
  const res = await runnerFetch(db, ckpt.run.runnerId, `/checkpoints/${encodeURIComponent(ckpt.run.id)}/${step}/adapter.tar.gz`, { signal });
  if (res.status === 404) throw new AppError("NOT_FOUND", `the runner no longer has the files of run #${ckpt.run.number} step ${step}: ${await errorMessage(res)}`);
  if (!res.ok || !res.body) throw new AppError("RUNNER_ERROR", `the runner refused the download: ${await errorMessage(res)}`);
  return { body: res.body, filename: `run-${ckpt.run.number}-step-${step}-adapter.tar.gz` };
}
