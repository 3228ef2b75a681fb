/**
 * What happens after a batch is stored (ingestAndEmit schedules it, outside the batch's transaction, and
 * does not wait for it: ingestion's pace never depends on the rules): the pathology rules run when the
 * batch finished a step, and a run that just ended raises its alert. One drain per run at a time; batches
 * that arrive meanwhile are merged into one more pass. Never throws: the alerts watcher also raises a
 * missed run-ended alert, and the next step re-evaluates the whole history.
 */
import { isTerminalStatus, type RunEvent, type RunStatus } from "@contracts";
import { alertRunEnded } from "../notify/alerts";
import type { Db } from "@/server/db-types";
import { evaluateRun } from "./store";

/** What a stored batch says (ingest/projection.ts's IngestResult; named here so the two modules do not import each other). */
export interface StoredBatch {
  fresh: readonly RunEvent[];
  status: RunStatus;
  statusChanged: boolean;
}

interface Work {
  evaluate: boolean;
  ended: boolean;
}
const pending = new Map<string, Work>();
const running = new Map<string, Promise<void>>();

export function schedulePostIngest(db: Db, runId: string, res: StoredBatch): void {
  // eval.finished too: the eval after the last step arrives after its step.finished (validation_fell reads it).
  const evaluate = res.fresh.some((e) => e.type === "step.finished" || e.type === "eval.finished");
  const ended = res.statusChanged && isTerminalStatus(res.status);
  if (!evaluate && !ended) return;
  const w = pending.get(runId) ?? { evaluate: false, ended: false };
  w.evaluate ||= evaluate;
  w.ended ||= ended;
  pending.set(runId, w);
  if (running.has(runId)) return;
  const drain = (async () => {
    for (let next = pending.get(runId); next; next = pending.get(runId)) {
      pending.delete(runId);
      await afterIngest(db, runId, next);
    }
  })().finally(() => running.delete(runId));
  running.set(runId, drain);
}

/** Resolves when the scheduled work of a run (or of every run) is done: for tests and shutdown. */
export async function postIngestSettled(runId?: string): Promise<void> {
  while (runId ? running.has(runId) : running.size > 0) {
    await (runId ? running.get(runId) : Promise.all(running.values()));
  }
}

async function afterIngest(db: Db, runId: string, w: Work): Promise<void> {
  try {
    if (w.evaluate) await evaluateRun(db, runId);
    if (w.ended) await alertRunEnded(db, runId);
  } catch (e) {
    console.warn(`[pathology] run ${runId}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
