/**
 * GET /api/export/runs/<runId>/checkpoints (app/api/export/…): the run's checkpoints as JSON, naming the best
 * one (best-checkpoint.ts) so a script can pick it without reading the eval events:
 *
 *   { "run_id", "run_number", "base_model",
 *     "best": { "step", "validation_reward", "model": "<n>@<step>", "alias": "<n>@best" } | null,
 *     "checkpoints": [{ "step", "model", "size_bytes", "created_at", "validation_reward", "train_reward", "best" }] }
 *
 * Authorized as the other exports (requireAccess "viewer"); a run of another workspace is 404.
 */
import { checkpointModelName } from "@contracts";
import { requireAccess } from "@/server/auth/request";
import { isAppError } from "@/server/errors";
import type { Db, DbOrTx } from "@/server/db-types";
import { listCheckpoints } from "./checkpoints";

const STATUS = { NOT_FOUND: 404, BAD_INPUT: 400, RUNNER_UNAVAILABLE: 503, RUNNER_ERROR: 502, FORBIDDEN: 403, UNAUTHORIZED: 401, CONFLICT: 409 } as const;

export async function checkpointsExport(db: DbOrTx, workspaceId: string, runId: string) {
  const list = await listCheckpoints(db, workspaceId, runId);
  return {
    run_id: list.runId,
    run_number: list.runNumber,
    base_model: list.baseModel,
    best: list.best && { step: list.best.step, validation_reward: list.best.reward, model: checkpointModelName(list.runNumber, list.best.step), alias: list.best.model },
    checkpoints: list.items.map((c) => ({
      step: c.step,
      model: c.model,
      size_bytes: c.sizeBytes,
      created_at: c.createdAt.toISOString(),
      validation_reward: c.evalReward,
      train_reward: c.trainReward,
      best: c.step === list.best?.step,
    })),
  };
}

export async function handleCheckpointsExport(req: Request, runId: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  try {
    const body = await checkpointsExport(access.db, access.workspaceId, runId);
    return Response.json(body, {
      headers: { "content-disposition": `attachment; filename="run-${body.run_number}-checkpoints.json"`, "cache-control": "private, no-store" },
    });
  } catch (e) {
    if (!isAppError(e)) throw e;
    return Response.json({ error: { message: e.message } }, { status: STATUS[e.code] });
  }
}
