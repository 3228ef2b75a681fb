/**
 * A page of a run's event log as JSON text written by Postgres (see features/run-view/server/run-events-http.ts for why):
 * each element is exactly what rowToEvent makes of a row ({run_id, seq, ts (ms), attempt when set, type, payload}).
 *
 * view "summary" (the run page's first load): a rollout.finished event's payload is the rollout's summary
 * (features/run-view/rollout-summary.ts) instead of the whole trajectory. In both views a checkpoint.saved
 * comes without its path on the runner's disk (ServedRunEvent); every other event is unchanged.
 */
import { CHECKPOINT_PATH_KEY } from "@contracts";
import { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";
import { REPLY_PREVIEW_CHARS, SUMMARY_OMITS } from "../rollout-summary";

export interface EventsJsonPage {
  body: string;
  count: number;
  /** The last seq in the page (the `after` asked for when the page is empty). */
  lastSeq: number;
}

export type EventsView = "full" | "summary";

/**
 * replyPreview (rollout-summary.ts) in SQL: the last assistant message with text (its first characters) or
 * with tool calls (`→ name, name`); "" when there is none. Reads the messages as jsonb: nothing is parsed.
 */
const REPLY_SQL = Prisma.sql`COALESCE((
    SELECT CASE WHEN COALESCE(m->>'content', '') <> '' THEN left(m->>'content', ${REPLY_PREVIEW_CHARS})
                ELSE '→ ' || (SELECT string_agg(c->'function'->>'name', ', ' ORDER BY ci) FROM jsonb_array_elements(m->'tool_calls') WITH ORDINALITY AS tc(c, ci)) END
    FROM jsonb_array_elements(e."payload"->'messages') WITH ORDINALITY AS msg(m, mi)
    WHERE m->>'role' = 'assistant'
      AND (COALESCE(m->>'content', '') <> '' OR (jsonb_typeof(m->'tool_calls') = 'array' AND jsonb_array_length(m->'tool_calls') > 0))
    ORDER BY mi DESC LIMIT 1), '')`;

/** A checkpoint's path on the runner's disk is never served (contracts/run.ts, ServedRunEvent), in either view. */
const payloadSql = (view: EventsView) =>
  view === "full"
    ? Prisma.sql`CASE WHEN e."type" = 'checkpoint.saved' THEN e."payload" - ${CHECKPOINT_PATH_KEY}::text ELSE e."payload" END`
    : Prisma.sql`CASE WHEN e."type" = 'rollout.finished'
        THEN (e."payload" - ${[...SUMMARY_OMITS]}::text[]) || jsonb_build_object('reply', ${REPLY_SQL})
        WHEN e."type" = 'checkpoint.saved' THEN e."payload" - ${CHECKPOINT_PATH_KEY}::text
        ELSE e."payload" END`;

export async function runEventsJson(db: DbOrTx, workspaceId: string, runId: string, afterSeq: number, limit: number, view: EventsView = "full"): Promise<EventsJsonPage> {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  const payload = payloadSql(view);
  const rows = await db.$queryRaw<{ body: string | null; count: bigint; last: number | null }[]>`
    SELECT json_agg(CASE WHEN e."attempt" IS NULL
             THEN json_build_object('run_id', e."runId", 'seq', e."seq", 'ts', floor(extract(epoch FROM e."ts") * 1000)::bigint,
                                    'type', e."type", 'payload', ${payload})
             ELSE json_build_object('run_id', e."runId", 'seq', e."seq", 'ts', floor(extract(epoch FROM e."ts") * 1000)::bigint,
                                    'attempt', e."attempt", 'type', e."type", 'payload', ${payload})
           END ORDER BY e."seq")::text AS body,
           count(*) AS count, max(e."seq") AS last
    FROM (SELECT * FROM "RunEvent" WHERE "runId" = ${runId} AND "seq" > ${afterSeq} ORDER BY "seq" LIMIT ${limit}) e`;
  const row = rows[0];
  return { body: row?.body ?? "[]", count: Number(row?.count ?? 0), lastSeq: row?.last ?? afterSeq };
}
