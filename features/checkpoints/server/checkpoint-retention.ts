/**
 * config.json's `checkpoints: { keep_last: N, keep_best: true }`: after each stored batch with a
 * checkpoint.saved or an eval.finished (ingestAndEmit schedules it, not awaited), a run keeps its newest N
 * checkpoints, its best-validated one (best-checkpoint.ts, when keep_best) and always its newest; the others
 * are deleted through deleteCheckpoints, the same mechanism an ART client's delete_checkpoints uses.
 *
 * Why after evals too: checkpoint s is evaluated after it is saved, so the best is only known then; until its
 * eval it is protected as one of the newest. With keep_best, a checkpoint that was never evaluated (eval_every
 * above 1) goes once it leaves the newest N. One pass per run at a time; batches meanwhile merge into one more.
 * A failure (runner unreachable) is logged and left: the next checkpoint's pass deletes what is still due.
 */
import { CheckpointsConfig, type RunEvent } from "@contracts";
import type { Db } from "@/server/db-types";
import { bestCheckpoint } from "./best-checkpoint";
import { deleteCheckpoints } from "./checkpoint-delete";

/** The steps to delete from `steps` (the run's checkpoints) under `policy`, given the best step. */
export function stepsToDelete(steps: readonly number[], policy: CheckpointsConfig, bestStep: number | null): number[] {
  if (policy.keep_last === null || steps.length === 0) return [];
  const sorted = [...new Set(steps)].sort((a, b) => a - b);
  const keep = new Set(sorted.slice(-policy.keep_last));
  keep.add(sorted.at(-1)!); // the newest, always
  if (policy.keep_best && bestStep !== null) keep.add(bestStep);
  return sorted.filter((s) => !keep.has(s));
}

/** Applies the run's retention now; returns the steps it deleted. */
export async function applyCheckpointRetention(db: Db, runId: string): Promise<number[]> {
  const run = await db.run.findUnique({ where: { id: runId }, select: { config: true, kind: true } });
  if (!run || run.kind !== "train") return [];
  const policy = CheckpointsConfig.safeParse((run.config as Record<string, unknown> | null)?.checkpoints ?? {});
  if (!policy.success || policy.data.keep_last === null) return [];
  const [rows, best] = await Promise.all([
    db.checkpoint.findMany({ where: { runId }, select: { step: true } }),
    policy.data.keep_best ? bestCheckpoint(db, runId) : Promise.resolve(null),
  ]);
  const doomed = stepsToDelete(rows.map((r) => r.step), policy.data, best?.step ?? null);
  if (doomed.length === 0) return [];
  const out = await deleteCheckpoints(db, runId, doomed);
  if (!out.ok) throw new Error(out.message);
  return doomed.filter((s) => !out.not_found_steps.includes(s));
}

const pending = new Set<string>();
const running = new Map<string, Promise<void>>();

/** After a stored batch: a pass of the run's retention when the batch saved a checkpoint or finished an eval. */
export function scheduleCheckpointRetention(db: Db, runId: string, fresh: readonly RunEvent[]): void {
  if (!fresh.some((e) => e.type === "checkpoint.saved" || e.type === "eval.finished")) return;
  pending.add(runId);
  if (running.has(runId)) return;
  const drain = (async () => {
    while (pending.delete(runId)) {
      await applyCheckpointRetention(db, runId).catch((e: unknown) => console.warn(`[checkpoints] run ${runId}: keeping checkpoints: ${e instanceof Error ? e.message : String(e)}`));
    }
  })().finally(() => running.delete(runId));
  running.set(runId, drain);
}

/** Resolves when the run's scheduled retention passes are done (tests). */
export async function checkpointRetentionSettled(runId: string): Promise<void> {
  while (running.has(runId)) await running.get(runId);
}
