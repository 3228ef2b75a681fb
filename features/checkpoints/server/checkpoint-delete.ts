/**
 * The one way Rollbook deletes checkpoints: an ART client's delete_checkpoints (DELETE
 * /api/art/v1/preview/models/{id}/checkpoints, features/art/server/art-checkpoints.ts) and the config's
 * checkpoints.keep_last retention (checkpoint-retention.ts) both call deleteCheckpoints.
 *
 * For each asked step the run has: the runner that holds the run removes the folder (DELETE
 * /runs/<run>/checkpoints/<step>, gpu-runner/src/http/checkpoint-delete.ts), and only then is the Checkpoint
 * row deleted, so the list never drops a checkpoint whose files are still served, and a runner that cannot be
 * reached leaves both in place. The run's newest checkpoint is refused here and again by the runner: the
 * next step samples from it and a resume trains on from it. A checkpoint an active run reads (an eval of it, a
 * fork starting from it: checkpoint-holders.ts) is not deleted now but marked (deleteRequestedAt) and deleted
 * when that run ends (releaseDeferredDeletes). Callers check the run's workspace first.
 */
import { AppError } from "@/server/errors";
import { runnerFetch } from "@/server/runner-client";
import type { DbOrTx } from "@/server/db-types";
import { errorMessage } from "./checkpoints";
import { checkpointHolders } from "./checkpoint-holders";

/** Why a deletion was refused: no such run, the newest checkpoint asked for (the caller's mistake), or the runner (none, or it failed). */
export type DeleteRefusal = "missing" | "newest" | "runner";

/** deferred_steps: kept until the active runs reading them end (then deleted), with who holds each. */
export type DeleteCheckpointsResult =
  | { ok: true; deleted_count: number; not_found_steps: number[]; deferred_steps: { step: number; held_by: string }[] }
  | { ok: false; reason: DeleteRefusal; message: string };

const plural = (n: number) => (n === 1 ? "" : "s");

export async function deleteCheckpoints(db: DbOrTx, runId: string, steps: number[]): Promise<DeleteCheckpointsResult> {
  const asked = [...new Set(steps)].sort((a, b) => a - b);
  const [run, rows] = await Promise.all([
    db.run.findUnique({ where: { id: runId }, select: { id: true, number: true, runnerId: true, workspaceId: true } }),
    db.checkpoint.findMany({ where: { runId }, select: { step: true }, orderBy: { step: "asc" } }),
  ]);
  if (!run) return { ok: false, reason: "missing", message: `run ${runId} not found` };
  const have = new Set(rows.map((r) => r.step));
  const found = asked.filter((s) => have.has(s));
  const notFound = asked.filter((s) => !have.has(s));
  if (found.length === 0) return { ok: true, deleted_count: 0, not_found_steps: notFound, deferred_steps: [] };
  const newest = rows.at(-1)!.step;
  if (found.includes(newest)) return { ok: false, reason: "newest", message: `steps: step ${newest} is run #${run.number}'s newest checkpoint, which its next step and a resume start from: it is never deleted` };
  let deleted = 0;
  const deferred: { step: number; held_by: string }[] = [];
  for (const step of found) {
    const holders = await checkpointHolders(db, run, step);
    if (holders.length > 0) {
      await db.checkpoint.updateMany({ where: { runId, step, deleteRequestedAt: null }, data: { deleteRequestedAt: new Date() } });
      deferred.push({ step, held_by: holders.map((h) => `run #${h.number} (${h.why})`).join(", ") });
      continue;
    }
    if (!run.runnerId) return { ok: false, reason: "runner", message: `steps: run #${run.number} has no runner holding its checkpoints` };
    let res: Response;
    try {
      res = await runnerFetch(db, run.runnerId, `/runs/${encodeURIComponent(run.id)}/checkpoints/${step}`, { method: "DELETE", signal: AbortSignal.timeout(30_000) });
    } catch (e) {
      const why = e instanceof AppError ? e.message : String(e);
      return { ok: false, reason: "runner", message: `steps: deleted ${deleted} checkpoint${plural(deleted)} of run #${run.number}, then step ${step} failed: ${why}` };
    }
    if (!res.ok) {
      const why = await errorMessage(res);
      return { ok: false, reason: "runner", message: `steps: deleted ${deleted} checkpoint${plural(deleted)} of run #${run.number}, then the runner refused step ${step}: ${why}` };
    }
    await res.body?.cancel().catch(() => undefined);
    await db.checkpoint.deleteMany({ where: { runId, step } });
    deleted++;
  }
  return { ok: true, deleted_count: deleted, not_found_steps: notFound, deferred_steps: deferred };
}

/**
 * The deferred deletions whose readers have all ended, carried out (each through deleteCheckpoints, which
 * defers again one still read). Called when any run reaches a terminal status; failures are logged and retried
 * at the next call (the mark stays).
 */
export async function releaseDeferredDeletes(db: DbOrTx): Promise<number> {
  const marked = await db.checkpoint.findMany({ where: { deleteRequestedAt: { not: null } }, select: { runId: true, step: true }, orderBy: [{ runId: "asc" }, { step: "asc" }] });
  let deleted = 0;
  for (const runId of new Set(marked.map((m) => m.runId))) {
    const out = await deleteCheckpoints(db, runId, marked.filter((m) => m.runId === runId).map((m) => m.step));
    if (out.ok) deleted += out.deleted_count;
    else process.stderr.write(`deferred checkpoint deletion of run ${runId}: ${out.message}\n`);
  }
  return deleted;
}
