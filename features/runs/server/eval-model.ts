/** The model an eval run evaluates: the base model, or a checkpoint of a run of the workspace. */
import { checkpointModelName, classifyModelName, runNumberOf } from "@contracts";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";

/**
 * An eval's model must exist before the eval starts (otherwise every rollout fails on "model not found"):
 * the run's base model (config.json "model"), or `<run>@<step>` naming a checkpoint of a run of this
 * workspace (by id or by its #number), which a Checkpoint row records. Returns the name the runner and
 * engine use (`<run id>@<step>`) and the runner that holds the checkpoint.
 */
export async function resolveEvalModel(
  db: DbOrTx,
  workspaceId: string,
  evalModel: string,
  baseModel: string,
): Promise<{ model: string; runnerId: string | null }> {
  if (evalModel === baseModel) return { model: evalModel, runnerId: null };
  const ref = classifyModelName(evalModel);
  if (ref.kind !== "checkpoint") {
    throw new AppError("BAD_INPUT", `evalModel: '${evalModel}' is neither the base model '${baseModel}' (config.json "model") nor a checkpoint '<run>@<step>'`);
  }
  const byNumber = runNumberOf(ref.run);
  const run = await db.run.findFirst({
    where: { workspaceId, OR: [{ id: ref.run }, ...(byNumber !== null ? [{ number: byNumber }] : [])] },
    select: { id: true, number: true, runnerId: true, checkpoints: { select: { step: true }, orderBy: { step: "asc" } } },
  });
  if (!run) throw new AppError("BAD_INPUT", `evalModel: no run '${ref.run}' in this workspace`);
  if (!run.checkpoints.some((c) => c.step === ref.step)) {
    const steps = run.checkpoints.map((c) => c.step);
    const has = steps.length === 0 ? "it has no checkpoints" : `its checkpoints are at steps ${steps.join(", ")}`;
    throw new AppError("BAD_INPUT", `evalModel: run #${run.number} has no checkpoint at step ${ref.step} (${has})`);
  }
  return { model: checkpointModelName(run.id, ref.step), runnerId: run.runnerId };
}
