/**
 * Side channels from services to the long-lived parts of the custom server (socket.io, ingestion). Both
 * are reached through globalThis: the tRPC handlers run in Next's route bundle, a separate module graph
 * from server/index.ts, in the same process. Where neither runs (tests, scripts) these are no-ops; the
 * ingester also scans for running runs it is not following, so a missed notification only delays it.
 */
import { servedEvent, type RunEvent } from "@contracts";
import { getIo } from "./realtime/io";
import { runRoom, type RunFlagMessage, type RunStatusMessage } from "@contracts/socket-events";

const INGEST = Symbol.for("rollbook.ingest");

export interface IngestHook {
  follow(runId: string): void;
  /** Follow the run from the runner the database now names, dropping a stream from the one it left. */
  refollow(runId: string): void;
}

export function setIngestHook(hook: IngestHook | undefined): void {
  (globalThis as { [INGEST]?: IngestHook })[INGEST] = hook;
}

export function notifyRunStarted(runId: string): void {
  (globalThis as { [INGEST]?: IngestHook })[INGEST]?.follow(runId);
}

/** A resume moved the run to another runner: ingestion reads from the new one from now on. */
export function notifyRunMoved(runId: string): void {
  (globalThis as { [INGEST]?: IngestHook })[INGEST]?.refollow(runId);
}

export function emitRunStatus(msg: RunStatusMessage): void {
  getIo()?.to(runRoom(msg.runId)).emit("run:status", msg);
}

export function emitRunEvents(runId: string, events: RunEvent[]): void {
  const io = getIo();
  if (!io) return;
  const room = io.to(runRoom(runId));
  // Served, not stored: a checkpoint's path on the runner's disk stays on the server (contracts/run.ts).
  for (const e of events) room.emit("run:event", servedEvent(e));
}

export function emitRunFlag(flag: RunFlagMessage): void {
  getIo()?.to(runRoom(flag.runId)).emit("run:flag", flag);
}
