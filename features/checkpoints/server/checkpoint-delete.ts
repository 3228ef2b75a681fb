/**
 * The one way Rollbook deletes checkpoints: an ART client's delete_checkpoints (DELETE
 * /api/art/v1/preview/models/{id}/checkpoints, features/art/server/art-checkpoints.ts) and the config's
 * checkpoints.keep_last retention (checkpoint-retention.ts) both call deleteCheckpoints.
 *
 * For each asked step the run has: the runner that holds the run removes the folder (DELETE
 * /runs/<run>/checkpoints/<step>, gpu-runner/src/http/checkpoint-delete.ts), and only then is the Checkpoint
 * row deleted, so the list never drops a checkpoint whose files are still served, and a runner that cannot be
 * reached leaves both in place. The run's newest checkpoint is refused here and again by the runner: the
 * next step samples from it and a resume trains on from it. Callers check the run's workspace first.
 */
import { AppError } from "@/server/errors";
import { runnerFetch } from "@/server/runner-client";
import type { DbOrTx } from "@/server/db-types";
import { errorMessage } from "./checkpoints";

/** Why a deletion was refused: no such run, the newest checkpoint asked for (the caller's mistake), or the runner (none, or it failed). */
export type DeleteRefusal = "missing" | "newest" | "runner";

export type DeleteCheckpointsResult = { ok: true; deleted_count: number; not_found_steps: number[] } | { ok: false; reason: DeleteRefusal; message: string };

const plural = (n: number) => (n === 1 ? "" : "s");

export async function deleteCheckpoints(db: DbOrTx, runId: string, steps: number[]): Promise<DeleteCheckpointsResult> {
  const asked = [...new Set(steps)].sort((a, b) => a - b);
  const [run, rows] = await Promise.all([
    db.run.findUnique({ where: { id: runId }, select: { id: true, number: true, runnerId: true } }),
    db.checkpoint.findMany({ where: { runId }, select: { step: true }, orderBy: { step: "asc" } }),
  ]);
  if (!run) return { ok: false, reason: "missing", message: `run ${runId} not found` };
  const have = new Set(rows.map((r) => r.step));
  const found = asked.filter((s) => have.has(s));
  const notFound = asked.filter((s) => !have.has(s));
  if (found.length === 0) return { ok: true, deleted_count: 0, not_found_steps: notFound };
  const newest = rows.at(-1)!.step;
  if (found.includes(newest)) return { ok: false, reason: "newest", message: `steps: step ${newest} is run #${run.number}'s newest checkpoint, which its next step and a resume start from: it is never deleted` };
  if (!run.runnerId) return { ok: false, reason: "runner", message: `steps: run #${run.number} has no runner holding its checkpoints` };
  let deleted = 0;
  for (const step of found) {
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
  return { ok: true, deleted_count: deleted, not_found_steps: notFound };
}
