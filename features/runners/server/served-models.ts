/**
 * The base models a workspace may name — config.model, judge.model on the runner's own engine, an eval's model,
 * `/api/v1`'s and ART's model: what the engines of the runners it may use serve (Runner.models, as each runner
 * last said in its status, kept by the heartbeat). A name none of them serves would sit queued forever (the
 * dispatcher gives a run only to a runner serving its model), so it is refused at Check with this list.
 *
 * Not the base models of the workspace's past runs: that list was fed by any string a member once typed into
 * config.model, and `/api/v1/models` then listed it as a model.
 */
import { classifyModelName } from "@contracts";
import { resolveRunner, runnerById } from "@/server/runner-client";
import type { DbOrTx } from "@/server/db-types";
import { runnersOf } from "./runner-pool";

/** How long Check waits for a runner that has not yet said what it serves (a fresh boot, a just-registered one). */
const ASK_TIMEOUT_MS = 5_000;

/**
 * The models served to `workspaceId`, sorted; null when no runner it may use has said (none registered, none
 * answering): then nothing can be decided here, and the start's own runner check says why.
 */
export async function servedModels(db: DbOrTx, workspaceId: string): Promise<string[] | null> {
  const find = () => db.runner.findMany({ where: { enabled: true, ...runnersOf(workspaceId) }, select: { id: true, models: true } });
  let rows = await find();
  if (rows.length === 0) {
    // The instance's runner (RUNNER_URL) is registered on first use, as every other path to it does.
    await resolveRunner(db).catch(() => null);
    rows = await find();
  }
  const models = new Set<string>();
  for (const row of rows) {
    let served = row.models;
    if (served.length === 0) served = await askRunner(db, row.id);
    for (const m of served) models.add(m);
  }
  return models.size === 0 ? null : [...models].sort();
}

/**
 * A runner's models, asked now; [] when it does not answer. Only the models are recorded on its row: whether a
 * runner is healthy is the heartbeat's and the dispatcher's to find out and say (a Check must not mark a runner
 * down, or up, under them).
 */
async function askRunner(db: DbOrTx, runnerId: string): Promise<string[]> {
  let models: string[];
  try {
    models = (await (await runnerById(db, runnerId)).status({ timeoutMs: ASK_TIMEOUT_MS })).models ?? [];
  } catch {
    return [];
  }
  if (models.length > 0) await db.runner.updateMany({ where: { id: runnerId }, data: { models } });
  return models;
}

/**
 * Why `model`, a base model `field` names, cannot be used in this workspace; null when a runner serves it (or
 * none has said what it serves: see servedModels). Checkpoint names are the caller's to check (their run's
 * workspace); a name of neither form is refused here by the shared grammar.
 */
export function baseModelProblem(field: string, model: string, served: readonly string[] | null): string | null {
  const name = classifyModelName(model);
  if (name.kind === "invalid") return `${field}: model ${JSON.stringify(model)} ${name.reason}`;
  if (name.kind === "checkpoint" || served === null || served.includes(model)) return null;
  return `${field}: model '${model}' is not served by any runner of this workspace; served: ${served.join(", ")}`;
}
