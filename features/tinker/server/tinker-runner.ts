/**
 * One call of the engine's Tinker primitives (contracts/tinker-engine.ts) through the model's runner
 * (gpu-runner/src/http/tinker-pass.ts), acting for the workspace. The runner is the run's (bound at its first
 * call: the runner whose engine serves the base model, as an ART model's is); its answer is checked against
 * the contract. A refusal with a status (the engine's or the runner's, naming the field) is the caller's
 * error (TinkerUserError); no answer, or a 5xx, is the server's.
 */
import type { z } from "zod";
import {
  RUNNER_WORKSPACE_HEADER,
  TinkerForwardBackwardResponse,
  TinkerLoadResponse,
  TinkerOptimStepResponse,
  TinkerSampleResponse,
  TinkerSaveResponse,
  type TinkerForwardBackwardRequest,
  type TinkerLoadRequest,
  type TinkerOptimStepRequest,
  type TinkerRecordedSampleRequest,
  type TinkerSaveRequest,
} from "@contracts";
import { AppError } from "@/server/errors";
import { resolveRunner, runnerFetch } from "@/server/runner-client";
import type { Db } from "@/server/db-types";
import { resolveBaseModel } from "@/features/checkpoints/server";
import { TinkerUserError } from "./tinker-futures";

interface Ops {
  forward_backward: [TinkerForwardBackwardRequest, TinkerForwardBackwardResponse];
  optim_step: [TinkerOptimStepRequest, TinkerOptimStepResponse];
  save: [TinkerSaveRequest, TinkerSaveResponse];
  load: [TinkerLoadRequest, TinkerLoadResponse];
  sample: [TinkerRecordedSampleRequest, TinkerSampleResponse];
}

const ANSWERS: { [K in keyof Ops]: z.ZodType<Ops[K][1]> } = {
  forward_backward: TinkerForwardBackwardResponse,
  optim_step: TinkerOptimStepResponse,
  save: TinkerSaveResponse,
  load: TinkerLoadResponse,
  sample: TinkerSampleResponse,
};

/** A training step on a CPU runner takes a while; a sample is bounded by its max_tokens. */
const CALL_TIMEOUT_MS = 60 * 60_000;

/** The runner serving `baseModel` to the workspace (its engine has it loaded), else the configured one. */
export async function runnerServing(db: Db, workspaceId: string, baseModel: string): Promise<string> {
  const base = await resolveBaseModel(db, workspaceId, baseModel);
  return base.runnerId ?? (await resolveRunner(db, undefined, workspaceId)).id;
}

/** The run's runner, bound on its first call (the runner serving its base model for the workspace). */
export async function runnerOfRun(db: Db, workspaceId: string, runId: string): Promise<string> {
  const run = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { runnerId: true, baseModel: true } });
  if (run.runnerId) return run.runnerId;
  const runnerId = await runnerServing(db, workspaceId, run.baseModel);
  await db.run.updateMany({ where: { id: runId, runnerId: null }, data: { runnerId } });
  return (await db.run.findUniqueOrThrow({ where: { id: runId }, select: { runnerId: true } })).runnerId ?? runnerId;
}

function refusal(text: string, status: number): { message: string; field: string | null } {
  try {
    const body = JSON.parse(text) as { detail?: unknown; field?: unknown; error?: { message?: unknown; param?: unknown } };
    if (typeof body.detail === "string") return { message: body.detail, field: typeof body.field === "string" ? body.field : null };
    if (typeof body.error?.message === "string") return { message: body.error.message, field: typeof body.error.param === "string" ? body.error.param : null };
  } catch {
    // not JSON: said as text below
  }
  return { message: text.slice(0, 300) || `HTTP ${status}`, field: null };
}

export async function engineCall<K extends keyof Ops>(db: Db, runnerId: string, workspaceId: string, op: K, body: Ops[K][0]): Promise<Ops[K][1]> {
  const res = await runnerFetch(db, runnerId, `/tinker/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", [RUNNER_WORKSPACE_HEADER]: workspaceId },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });
  const text = await res.text();
  if (res.status >= 400 && res.status < 500) {
    const r = refusal(text, res.status);
    throw new TinkerUserError(r.message, r.field);
  }
  if (!res.ok) throw new AppError("RUNNER_ERROR", `the runner's engine failed ${op} (${res.status}): ${refusal(text, res.status).message}`);
  const parsed = ANSWERS[op].safeParse(JSON.parse(text));
  if (!parsed.success) throw new AppError("RUNNER_ERROR", `the runner answered ${op} in a shape Rollbook does not read: ${text.slice(0, 200)}`);
  return parsed.data;
}
