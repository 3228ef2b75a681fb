/**
 * What the run page asks of a run's stored rollouts after its first load, which carried summaries only
 * (features/run-view/rollout-summary.ts): whole trajectories by the seq of the rollout.finished event that
 * carried them (a transcript opened, two rollouts diffed, the list exported), and a text search over what
 * the summaries left out. Both read the stored event log, so a rollout is exactly what its event said.
 */
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";

async function requireRun(db: DbOrTx, workspaceId: string, runId: string): Promise<void> {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
}

/**
 * The trajectories carried by these seqs, as JSON text ([{…trajectory, seq}], in seq order); a seq that is not a
 * rollout.finished event of this run is left out.
 */
export async function rolloutsJson(db: DbOrTx, workspaceId: string, runId: string, seqs: readonly number[]): Promise<string> {
  await requireRun(db, workspaceId, runId);
  const rows = await db.$queryRaw<{ body: string | null }[]>`
    SELECT json_agg(e."payload" || jsonb_build_object('seq', e."seq") ORDER BY e."seq")::text AS body
    FROM "RunEvent" e
    WHERE e."runId" = ${runId} AND e."seq" = ANY(${[...seqs]}::int[]) AND e."type" = 'rollout.finished'`;
  return rows[0]?.body ?? "[]";
}

export interface RolloutSearch {
  /** Seqs of the rollout.finished events whose rollout matches, ascending. */
  seqs: number[];
  /** The highest seq the search looked at: a rollout stored later was not searched. */
  through: number;
}

/**
 * Rollouts whose messages (text, tool names and arguments), task or error contain `query`, case-insensitively:
 * what the page's search box matched when every rollout's messages were in the browser (rollout-filter.ts's
 * searchableText). A task that is not a string is matched on its JSON text as Postgres writes it.
 */
export async function searchRollouts(db: DbOrTx, workspaceId: string, runId: string, query: string): Promise<RolloutSearch> {
  await requireRun(db, workspaceId, runId);
  // A LIKE pattern that matches the text literally: escape the pattern's own wildcards.
  const pattern = `%${query.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const rows = await db.$queryRaw<{ seqs: number[] | null; through: number | null }[]>`
    SELECT array_agg(e."seq" ORDER BY e."seq") FILTER (WHERE
             EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(e."payload"->'messages') = 'array' THEN e."payload"->'messages' ELSE '[]'::jsonb END) AS msg(m)
                     WHERE lower(m->>'content') LIKE ${pattern}
                        OR EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(m->'tool_calls') = 'array' THEN m->'tool_calls' ELSE '[]'::jsonb END) AS tc(c)
                                   WHERE lower(c->'function'->>'name') LIKE ${pattern} OR lower(c->'function'->>'arguments') LIKE ${pattern}))
             OR lower(CASE WHEN jsonb_typeof(e."payload"->'task') = 'string' THEN e."payload"->>'task' ELSE COALESCE(e."payload"->'task', 'null'::jsonb)::text END) LIKE ${pattern}
             OR lower(e."payload"->'error'->>'kind') LIKE ${pattern}
             OR lower(e."payload"->'error'->>'message') LIKE ${pattern}) AS seqs,
           max(e."seq") AS through
    FROM "RunEvent" e
    WHERE e."runId" = ${runId} AND e."type" = 'rollout.finished'`;
  return { seqs: rows[0]?.seqs ?? [], through: rows[0]?.through ?? 0 };
}
