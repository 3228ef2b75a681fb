/**
 * A page of a run's event log as JSON text written by Postgres (see features/run-view/server/run-events-http.ts for why):
 * each element is exactly what rowToEvent makes of a row ({run_id, seq, ts (ms), attempt when set, type, payload}).
 */
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";

export interface EventsJsonPage {
  body: string;
  count: number;
  /** The last seq in the page (the `after` asked for when the page is empty). */
  lastSeq: number;
}

export async function runEventsJson(db: DbOrTx, workspaceId: string, runId: string, afterSeq: number, limit: number): Promise<EventsJsonPage> {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  const rows = await db.$queryRaw<{ body: string | null; count: bigint; last: number | null }[]>`
    SELECT json_agg(CASE WHEN e."attempt" IS NULL
             THEN json_build_object('run_id', e."runId", 'seq', e."seq", 'ts', floor(extract(epoch FROM e."ts") * 1000)::bigint,
                                    'type', e."type", 'payload', e."payload")
             ELSE json_build_object('run_id', e."runId", 'seq', e."seq", 'ts', floor(extract(epoch FROM e."ts") * 1000)::bigint,
                                    'attempt', e."attempt", 'type', e."type", 'payload', e."payload")
           END ORDER BY e."seq")::text AS body,
           count(*) AS count, max(e."seq") AS last
    FROM (SELECT * FROM "RunEvent" WHERE "runId" = ${runId} AND "seq" > ${afterSeq} ORDER BY "seq" LIMIT ${limit}) e`;
  const row = rows[0];
  return { body: row?.body ?? "[]", count: Number(row?.count ?? 0), lastSeq: row?.last ?? afterSeq };
}
