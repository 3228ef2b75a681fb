/**
 * POST /api/art/v1/chat/completions: what ART's `model.openai_client()` calls (its base_url is the
 * backend's). It is /api/v1's handler (features/openai-api/server/openai-api.ts: authorization, body cap,
 * web → runner → engine, streaming, the caller's model name in the answer) with two differences:
 *
 *   - model names: `wandb-artifact:///<entity>/<project>/<name>` is the workspace's live ART model of that
 *     project and name (what return_existing finds) at its newest checkpoint `<run id>@<step>`, or its base
 *     model while it has none (a log-only run); `…:step<N>` is that checkpoint, 404 when the run has none.
 *     The entity is the workspace's slug (or id), as models.create answers it. Any other name is as /api/v1.
 *   - asked for logprobs, the engine writes each token `token_id:<id>` (art-inference.ts withTokenIds).
 */
import { checkpointModelName } from "@contracts";
import { AppError } from "@/server/errors";
import type { Db } from "@/server/db-types";
import { handleChatCompletions } from "@/features/openai-api/server";
import { resolveBaseModel, resolveModel, type ResolvedModel } from "@/features/checkpoints/server";
import { recordSignOfLife, recoverRun } from "@/features/run-lifecycle/server";
import { parseArtModelName, withTokenIds } from "./art-inference";
import { activeModelNamed } from "./art-models";

/**
 * Sampling is the client at work, so it counts as the client calling (art-models.ts clientCalled), but a
 * running run's sign of life is written at most this often: ART samples a step's rollouts in parallel, and
 * one write per request would be hundreds on one row.
 */
export const SAMPLING_SIGN_OF_LIFE_MS = 60_000;

const MAX_STEP = 2_147_483_647;

const notFound = (model: string, why: string) => new AppError("NOT_FOUND", `model '${model}' not found: ${why}`);

async function sampledBy(db: Db, run: { id: string; status: string; lastHeartbeatAt: Date | null }): Promise<void> {
  if (run.status === "lost") await recoverRun(db, run.id);
  else if (!run.lastHeartbeatAt || Date.now() - run.lastHeartbeatAt.getTime() >= SAMPLING_SIGN_OF_LIFE_MS) await recordSignOfLife(db, run.id, "running");
}

/** The caller's model name → what the runner serves, in this workspace only (anything else is NOT_FOUND). */
export async function resolveArtModel(db: Db, workspaceId: string, model: string): Promise<ResolvedModel> {
  const ref = parseArtModelName(model);
  if (!ref) return resolveModel(db, workspaceId, model);
  const ws = await db.workspace.findUniqueOrThrow({ where: { id: workspaceId }, select: { slug: true } });
  if (ref.entity !== ws.slug && ref.entity !== workspaceId) throw notFound(model, `this token acts in workspace '${ws.slug}', not '${ref.entity}'`);
  const run = await db.run.findFirst({
    where: activeModelNamed(workspaceId, ref.project, ref.name),
    orderBy: { createdAt: "desc" },
    select: { id: true, number: true, status: true, baseModel: true, runnerId: true, lastHeartbeatAt: true },
  });
  if (!run) throw notFound(model, `no live ART model '${ref.name}' in project '${ref.project}'`);
  await sampledBy(db, run);
  let step = ref.step;
  if (step === null) {
    const newest = await db.checkpoint.findFirst({ where: { runId: run.id }, orderBy: { step: "desc" }, select: { step: true } });
    // A log-only run (or one not trained yet) samples its base model, as ART's first step does.
    if (!newest) return resolveBaseModel(db, workspaceId, run.baseModel);
    step = newest.step;
  } else {
    const found = step <= MAX_STEP && (await db.checkpoint.findUnique({ where: { runId_step: { runId: run.id, step } }, select: { step: true } }));
    if (!found) throw notFound(model, `the ART model '${ref.project}/${ref.name}' (run #${run.number}) has no checkpoint for step ${step}`);
  }
  return { kind: "checkpoint", runId: run.id, runNumber: run.number, step, runnerId: run.runnerId, runnerModel: checkpointModelName(run.id, step) };
}

/** The route's POST chat/completions. `db`: tests. */
export function handleArtChat(req: Request, db?: Db): Promise<Response> {
  return handleChatCompletions(req, { db, resolve: resolveArtModel, prepare: withTokenIds });
}
