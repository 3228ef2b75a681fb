/**
 * "runner lost": a running run whose runner does not answer becomes `lost` (not terminal, not "running"
 * forever). One conditional update (status running → lost), so the ingest scan and the heartbeat monitor
 * of any number of web processes can all call it: only the first changes the row and tells the page.
 */
import { emitRunStatus } from "./run-hooks";
import type { DbOrTx } from "./types";

export async function markRunLost(db: DbOrTx, runId: string, since: Date): Promise<boolean> {
  const res = await db.run.updateMany({ where: { id: runId, status: "running" }, data: { status: "lost", lostSince: since } });
  if (res.count === 0) return false;
  const row = await db.run.findUnique({ where: { id: runId }, select: { lastSeq: true, error: true } });
  emitRunStatus({ runId, status: "lost", error: row?.error ?? null, lastSeq: row?.lastSeq ?? 0, lostSince: since.getTime() });
  return true;
}
