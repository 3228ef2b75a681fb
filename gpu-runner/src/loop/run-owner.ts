/**
 * Which workspace each run on this runner belongs to, kept beside its log (runs/<run>/workspace.json), so the
 * runner can refuse on its own a model reference that crosses workspaces — a checkpoint of another
 * workspace's run named in eval_model, init_from, judge.model or a chat's model — even if the web server's
 * check (which comes first) had a bug. The web server says the workspace of every run it starts
 * (RunSpec.workspace_id); a run id never changes workspace.
 */
import fs from "node:fs";
import path from "node:path";
import { classifyModelName } from "../../../contracts";
import { assertSafeRunId } from "../events/event-log";

const FILE = "workspace.json";

function ownerFile(runsDir: string, runId: string): string {
  assertSafeRunId(runId);
  return path.join(runsDir, runId, FILE);
}

/** The workspace recorded for the run; null when none is (a run folder of another runner, or none at all). */
export function runWorkspace(runsDir: string, runId: string): string | null {
  try {
    const value = JSON.parse(fs.readFileSync(ownerFile(runsDir, runId), "utf8")) as { workspace_id?: unknown };
    return typeof value.workspace_id === "string" ? value.workspace_id : null;
  } catch {
    return null;
  }
}

export class RunOwnerConflict extends Error {}

/** Record the run's workspace (written once, atomically); a different one for the same run id is refused. */
export function recordRunWorkspace(runsDir: string, runId: string, workspaceId: string): void {
  const existing = runWorkspace(runsDir, runId);
  if (existing === workspaceId) return;
  if (existing !== null) throw new RunOwnerConflict(`run ${runId} belongs to another workspace on this runner`);
  const file = ownerFile(runsDir, runId);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify({ workspace_id: workspaceId }) + "\n", { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/**
 * Why `model`, named by `field` for a run of `workspaceId`, may not be used here; null when it may (a base
 * model name, or a checkpoint of a run of the same workspace). The message says "not found" and nothing
 * more: another workspace's run ids are none of the caller's business. A name that is neither (the shared
 * grammar's `<run>@２`, `<run>@2\n`…) is refused too, never passed on as "a base model".
 */
export function modelRefProblem(runsDir: string, field: string, model: string, workspaceId: string): string | null {
  const ref = classifyModelName(model);
  if (ref.kind === "invalid") return `${field}: model ${JSON.stringify(model)} not found: it ${ref.reason}`;
  if (ref.kind === "base") return null;
  let owner: string | null;
  try {
    owner = runWorkspace(runsDir, ref.run);
  } catch {
    owner = null; // not a valid run id: not found either
  }
  return owner === workspaceId ? null : `${field}: model '${model}' not found: no run '${ref.run}' in this workspace`;
}
