/**
 * A stored batch reaches its readers: the run's socket room gets the events that were new, the lifecycle
 * announces a status change, the flags look at what was stored, and the run's checkpoint retention runs.
 */
import type { RunEvent } from "@contracts";
import { schedulePostIngest } from "@/features/flags/server";
import { scheduleCheckpointRetention } from "@/features/checkpoints/server";
import { emitRunEvents } from "@/server/run-hooks";
import { announce } from "../lifecycle";
import type { Db } from "@/server/db-types";
import { ingestEvents, type IngestOpts, type IngestResult } from "./projection";

/** Ingest a batch and tell socket subscribers about what was new. */
export async function ingestAndEmit(db: Db, runId: string, events: RunEvent[], fromRunnerId?: string, opts: IngestOpts = {}): Promise<IngestResult> {
  const res = await ingestEvents(db, runId, events, fromRunnerId, opts);
  if (res.fresh.length > 0) emitRunEvents(runId, res.fresh);
  if (res.statusChanged) announce(db, { runId, status: res.status, error: res.error, lastSeq: res.lastSeq, attempt: res.attempt });
  if (res.fresh.length > 0) schedulePostIngest(db, runId, res); // pathology flags, run-ended alerts (not awaited)
  if (res.fresh.length > 0) scheduleCheckpointRetention(db, runId, res.fresh); // config checkpoints.keep_last (not awaited)
  return res;
}
