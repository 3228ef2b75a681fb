/**
 * What happens after a batch is stored (called by ingestAndEmit, outside its transaction): the pathology
 * rules run when the batch finished a step, and a run that just ended raises its alert. Never throws:
 * a failing evaluation must not make ingestion re-read the stream; the watcher retries what it can.
 */
import type { IngestResult } from "../ingest";
import { alertRunEnded } from "../alerts/alerts";
import type { Db } from "../types";
import { evaluateRun } from "./store";

const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "stopped"]);

export async function afterIngest(db: Db, runId: string, res: IngestResult): Promise<void> {
  try {
    if (res.fresh.some((e) => e.type === "step.finished")) await evaluateRun(db, runId);
    if (res.statusChanged && TERMINAL.has(res.status)) await alertRunEnded(db, runId);
  } catch (e) {
    console.warn(`[pathology] run ${runId}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
