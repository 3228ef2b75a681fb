/**
 * DELETE /runs/<run>/checkpoints/<step>: removes one checkpoint's folder from this runner's runs folder and
 * from the shared checkpoint folder when there is one. The web server is the only caller, from its one
 * deletion mechanism (features/checkpoints/server/checkpoint-delete.ts: an ART client's delete_checkpoints and
 * the config's checkpoints.keep_last retention both go through it), after checking the user's workspace.
 *
 * The run's newest complete checkpoint is refused (409), whoever asks: the next step samples from it and a
 * resume trains on from it (the engine's "run step" is its newest folder). Deleting a step that is not there
 * answers `deleted: false` (200): the web server asked for what is already gone.
 *
 * The folder is first renamed to a hidden `.tmp-deleted-…` name beside it, one step that makes it vanish from
 * every listing (the engine and completeSteps count only all-digit names), then removed; a crash in between
 * leaves a temp folder the engine sweeps on its next save.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { identifierRule, isIdentifier } from "../../../contracts";
import { assertSafeRunId } from "../events/event-log";
import { completeSteps } from "../loop/shared-checkpoints";
import { checkpointDir } from "./checkpoint-archive";

export const DELETE_CHECKPOINT_ROUTE = /^\/runs\/([^/]+)\/checkpoints\/([^/]+)$/;

export class CheckpointDeleteRefused extends Error {
  constructor(
    readonly status: 400 | 409,
    message: string,
  ) {
    super(message);
    this.name = "CheckpointDeleteRefused";
  }
}

async function removeFolder(dir: string): Promise<boolean> {
  const hidden = path.join(path.dirname(dir), `.tmp-deleted-${path.basename(dir)}-${randomUUID().slice(0, 8)}`);
  try {
    await fs.rename(dir, hidden);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw e;
  }
  await fs.rm(hidden, { recursive: true, force: true });
  return true;
}

export async function deleteCheckpointFiles(runsDir: string, sharedDir: string | undefined, runId: string, stepText: string): Promise<{ deleted: boolean }> {
  try {
    assertSafeRunId(runId);
  } catch (e) {
    throw new CheckpointDeleteRefused(400, (e as Error).message);
  }
  if (!isIdentifier("step", stepText)) throw new CheckpointDeleteRefused(400, `invalid step ${JSON.stringify(stepText.slice(0, 40))}: ${identifierRule("step")}`);
  const step = Number(stepText);
  const newest = (await completeSteps(runsDir, runId)).at(-1);
  if (newest === step) throw new CheckpointDeleteRefused(409, `step ${step} is run ${runId}'s newest checkpoint, which its next step and a resume start from: it is never deleted`);
  const local = await removeFolder(checkpointDir(runsDir, runId, step));
  const shared = sharedDir ? await removeFolder(checkpointDir(sharedDir, runId, step)) : false;
  return { deleted: local || shared };
}
