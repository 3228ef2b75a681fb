/**
 * The runs table: filter, sort by any summary metric, search, cursor pages (runs.list, the runs page, the
 * runs CSV export), and editing a run's tags and notes (runs.update).
 *
 * Why raw SQL for the page of ids: Prisma's query builder can neither sort by a JSON value nor match a
 * tsvector, and keyset pagination over a nullable sort key needs an explicit WHERE. The ids come from one
 * SQL query (every condition a bound parameter, the workspace always among them); the rows' fields then come
 * from Prisma as before. Indexes: prisma/migrations/*_runs_table_indexes (measured in bench/runs-table.ts).
 *
 * Cursor: base64url JSON of the sort, the direction, the last row's sort value and its id. Rows are ordered
 * by (value, id) with runs lacking the value last in both directions, so the next page starts exactly after
 * the last row — no duplicate and no gap even where many runs share a value — and a cursor from another
 * sort is refused instead of silently skipping rows.
 */
import { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import { formatZodIssues, meanRewardOf } from "@contracts";
import { queuePositions } from "@/features/run-lifecycle/server";
import { fromDbKind, toDbKind } from "@/server/run-convert";
import { readArtClient } from "@/features/art";
import type { z } from "zod";
import { RunsListInput, RunUpdateInput, type RunsSort } from "../runs-table-query";
import type { DbOrTx } from "@/server/db-types";

type ListArgs = z.output<typeof RunsListInput>;
type SortValue = number | string | null;
interface Cursor {
  s: RunsSort;
  d: "asc" | "desc";
  v: SortValue;
  id: string;
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c)).toString("base64url");
}

function decodeCursor(text: string, sort: RunsSort, dir: "asc" | "desc"): Cursor {
  let c: Partial<Cursor>;
  try {
    c = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Partial<Cursor>;
  } catch {
    throw new AppError("BAD_INPUT", "cursor: not a cursor this list returned");
  }
  if (typeof c !== "object" || c === null || typeof c.id !== "string" || !(c.v === null || typeof c.v === "number" || typeof c.v === "string")) {
    throw new AppError("BAD_INPUT", "cursor: not a cursor this list returned");
  }
  if (c.s !== sort || c.d !== dir) throw new AppError("BAD_INPUT", "cursor: it belongs to another sort; start again from the first page");
  if (sort === "createdAt" && (typeof c.v !== "string" || Number.isNaN(Date.parse(c.v)))) throw new AppError("BAD_INPUT", "cursor: not a cursor this list returned");
  return c as Cursor;
}

/** The SQL value a run sorts by. Summary values that are not JSON numbers count as missing. */
function sortExpr(sort: RunsSort): Prisma.Sql {
  if (sort === "createdAt") return Prisma.sql`r."createdAt"`;
  if (sort === "number") return Prisma.sql`r."number"`;
  // meanRewardOf (contracts/mean-reward.ts) in SQL, so the sort orders by the very number the column shows.
  if (sort === "rewardMean") return Prisma.sql`(CASE WHEN r."rewardCount" > 0 THEN r."rewardSum" / r."rewardCount" END)`;
  const key = sort.slice(2);
  return Prisma.sql`(CASE WHEN jsonb_typeof(r."summary" -> ${key}) = 'number' THEN (r."summary" ->> ${key})::float8 END)`;
}

const nullable = (sort: RunsSort) => sort === "rewardMean" || sort.startsWith("m:");

/** Rows strictly after the cursor in (value NULLS LAST, id) order. */
function afterCursor(sort: RunsSort, dir: "asc" | "desc", c: Cursor): Prisma.Sql {
  const expr = sortExpr(sort);
  const cmp = Prisma.raw(dir === "desc" ? "<" : ">");
  const value = sort === "createdAt" ? new Date(c.v as string) : c.v;
  if (value === null) return Prisma.sql`(${expr} IS NULL AND r."id" ${cmp} ${c.id})`;
  const orNull = nullable(sort) ? Prisma.sql` OR ${expr} IS NULL` : Prisma.empty;
  return Prisma.sql`(${expr} ${cmp} ${value} OR (${expr} = ${value} AND r."id" ${cmp} ${c.id})${orNull})`;
}

/**
 * One search word as a prefix tsquery, made by the database's own parser (the same 'simple' one the index
 * uses), so "lr-1e-5" or "say-the-word" split the same way in the query as in the documents. Quotes and
 * backslashes are escaped for the tsquery syntax; a word with no lexeme gives NULL, which matches nothing.
 */
function wordQuery(word: string): Prisma.Sql {
  return Prisma.sql`(SELECT to_tsquery('simple', string_agg('''' || replace(replace(t.lexeme, '\\', '\\\\'), '''', '''''') || ''':*', ' & '))
    FROM unnest(to_tsvector('simple', ${word})) AS t)`;
}

/** Every word must match the experiment's name, the run's tags or notes, or be the run's number ("#12").
 * The experiments' ids go in as an array (= ANY(ARRAY(…)), not IN (…)): with IN the planner ORs a hashed
 * subplan into a filter and computes every run's search document (35 ms at 10,000 runs); with an array it
 * ORs two bitmap index scans (search index, experimentId index) — 5 ms. See bench/runs-table.ts.
 */
function searchCondition(workspaceId: string, q: string): Prisma.Sql[] {
  const words = q.split(/\s+/).filter(Boolean).slice(0, 8);
  return words.map((word) => {
    const num = /^(#?)(\d{1,9})$/.exec(word);
    // "#12" is run 12 and nothing else; a bare "12" is run 12 or a word starting with 12.
    if (num?.[1]) return Prisma.sql`r."number" = ${Number(num[2])}`;
    const tsq = wordQuery(word);
    const byNumber = num ? Prisma.sql` OR r."number" = ${Number(num[2])}` : Prisma.empty;
    return Prisma.sql`(rollbook_run_search_doc(r."tags", r."notes") @@ ${tsq}
      OR r."experimentId" = ANY(ARRAY(SELECT e."id" FROM "Experiment" e WHERE e."workspaceId" = ${workspaceId} AND to_tsvector('simple', e."name") @@ ${tsq}))${byNumber})`;
  });
}

/** The WHERE conditions of a filter (the workspace first, always). */
function conditions(workspaceId: string, f: ListArgs): Prisma.Sql[] {
  const out: Prisma.Sql[] = [Prisma.sql`r."workspaceId" = ${workspaceId}`];
  if (f.experimentId) out.push(Prisma.sql`r."experimentId" = ${f.experimentId}`);
  if (f.status?.length) out.push(Prisma.sql`r."status" = ANY(${f.status}::text[]::"RunStatus"[])`);
  if (f.kind?.length) {
    const kinds = f.kind.map(toDbKind);
    out.push(Prisma.sql`r."kind" = ANY(${kinds}::text[]::"RunKind"[])`);
  }
  if (f.authorId) out.push(Prisma.sql`r."createdById" = ${f.authorId}`);
  if (f.tag) out.push(Prisma.sql`r."tags" @> ARRAY[${f.tag.trim()}]::text[]`);
  if (f.baseModel) out.push(Prisma.sql`r."baseModel" = ${f.baseModel}`);
  if (f.from) out.push(Prisma.sql`r."createdAt" >= ${f.from}`);
  if (f.to) out.push(Prisma.sql`r."createdAt" < ${f.to}`);
  if (f.q?.trim()) out.push(...searchCondition(workspaceId, f.q.trim()));
  // RunFlag's unique (runId, rule, firstStep) index answers this per run.
  // Flagged: a problem (warning or critical); an info flag (converged, length moving with the reward) is not one.
  if (f.flagged) out.push(Prisma.sql`EXISTS (SELECT 1 FROM "RunFlag" rf WHERE rf."runId" = r."id" AND rf."severity" <> 'info')`);
  return out;
}

const ROW_SELECT = {
  id: true,
  number: true,
  kind: true,
  status: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
  rewardSum: true,
  rewardCount: true,
  rolloutCount: true,
  errorCount: true,
  currentStep: true,
  error: true,
  experimentId: true,
  baseModel: true,
  tags: true,
  notes: true,
  summary: true,
  artClient: true,
  lastHeartbeatAt: true,
  experiment: { select: { name: true } },
  version: { select: { number: true } },
  createdBy: { select: { id: true, name: true, email: true } },
  flags: { select: { rule: true, severity: true, firstStep: true }, orderBy: { firstStep: "asc" } },
} satisfies Prisma.RunSelect;

function summaryOf(json: Prisma.JsonValue): Record<string, number> {
  if (!json || typeof json !== "object" || Array.isArray(json)) return {};
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(json)) if (typeof v === "number") out[k] = v;
  return out;
}

/** One page of the workspace's runs. Input as runs.list takes it (parsed here too, so other callers get the same checks). */
export async function listRunsTable(db: DbOrTx, workspaceId: string, raw: RunsListInput) {
  const parsed = RunsListInput.safeParse(raw);
  if (!parsed.success) throw new AppError("BAD_INPUT", formatZodIssues(parsed.error, "", "input").join("; "));
  const input = parsed.data;
  const { sort, dir, limit } = input;
  const where = conditions(workspaceId, input);
  if (input.cursor) where.push(afterCursor(sort, dir, decodeCursor(input.cursor, sort, dir)));
  const order = Prisma.raw(dir === "desc" ? "DESC" : "ASC");
  const expr = sortExpr(sort);
  const page = await db.$queryRaw<{ id: string; v: Date | number | null }[]>`
    SELECT r."id", ${expr} AS "v" FROM "Run" r
    WHERE ${Prisma.join(where, " AND ")}
    ORDER BY ${expr} ${order} NULLS LAST, r."id" ${order}
    LIMIT ${limit + 1}`;
  const ids = page.slice(0, limit);
  const rows = await db.run.findMany({ where: { workspaceId, id: { in: ids.map((r) => r.id) } }, select: ROW_SELECT });
  const byId = new Map(rows.map((r) => [r.id, r]));
  const queued = await queuePositions(db, rows.filter((r) => r.status === "queued").map((r) => r.id));
  const last = ids.at(-1);
  const toValue = (v: Date | number | null): SortValue => (v instanceof Date ? v.toISOString() : v === null ? null : Number(v));
  return {
    items: ids.flatMap(({ id }) => {
      const r = byId.get(id);
      if (!r) return []; // deleted between the two queries
      return [
        {
          id: r.id,
          number: r.number,
          kind: fromDbKind(r.kind),
          status: r.status,
          /** 1 = next to start; null unless the run waits for a runner. */
          queuePosition: queued.get(r.id) ?? null,
          experimentId: r.experimentId,
          experimentName: r.experiment.name,
          versionNumber: r.version.number,
          /** An ART run's model name (run-name.ts names the run by it); null for other kinds. */
          artName: readArtClient(r.artClient)?.name ?? null,
          /** The last sign of life: an ART run's client idle since then (features/art/art-idle.ts). */
          lastHeartbeatAt: r.lastHeartbeatAt,
          baseModel: r.baseModel,
          createdAt: r.createdAt,
          startedAt: r.startedAt,
          finishedAt: r.finishedAt,
          /** contracts/mean-reward.ts: the one definition of a run's mean reward. */
          rewardMean: meanRewardOf(r),
          rolloutCount: r.rolloutCount,
          errorCount: r.errorCount,
          currentStep: r.currentStep,
          error: r.error,
          tags: r.tags,
          notes: r.notes,
          summary: summaryOf(r.summary),
          createdBy: r.createdBy,
          flags: r.flags,
        },
      ];
    }),
    nextCursor: page.length > limit && last ? encodeCursor({ s: sort, d: dir, v: toValue(last.v), id: last.id }) : null,
  };
}

/** What the filter bar offers: the workspace's base models, tags, authors and summary metric names. */
export async function runsFacets(db: DbOrTx, workspaceId: string) {
  const [models, tags, keys, authors] = await Promise.all([
    db.$queryRaw<{ v: string }[]>`SELECT DISTINCT "baseModel" AS v FROM "Run" WHERE "workspaceId" = ${workspaceId} ORDER BY 1 LIMIT 200`,
    db.$queryRaw<{ v: string }[]>`SELECT DISTINCT unnest("tags") AS v FROM "Run" WHERE "workspaceId" = ${workspaceId} ORDER BY 1 LIMIT 500`,
    db.$queryRaw<{ v: string }[]>`SELECT DISTINCT jsonb_object_keys("summary") AS v FROM "Run" WHERE "workspaceId" = ${workspaceId} ORDER BY 1 LIMIT 200`,
    db.$queryRaw<{ id: string; name: string; email: string }[]>`
      SELECT u."id", u."name", u."email" FROM "User" u
      WHERE u."id" IN (SELECT DISTINCT "createdById" FROM "Run" WHERE "workspaceId" = ${workspaceId} AND "createdById" IS NOT NULL)
      ORDER BY u."name" LIMIT 200`,
  ]);
  return { baseModels: models.map((r) => r.v), tags: tags.map((r) => r.v), metrics: keys.map((r) => r.v), authors };
}

/** Set a run's tags and/or notes (members and up; the router checks the role). */
export async function updateRun(db: DbOrTx, workspaceId: string, raw: RunUpdateInput) {
  const parsed = RunUpdateInput.safeParse(raw);
  if (!parsed.success) throw new AppError("BAD_INPUT", formatZodIssues(parsed.error, "", "input").join("; "));
  const { id, tags, notes } = parsed.data;
  const res = await db.run.updateMany({
    where: { id, workspaceId },
    data: { ...(tags !== undefined ? { tags } : {}), ...(notes !== undefined ? { notes } : {}) },
  });
  if (res.count === 0) throw new AppError("NOT_FOUND", `run ${id} not found`);
  const run = await db.run.findFirstOrThrow({ where: { id, workspaceId }, select: { id: true, tags: true, notes: true } });
  return run;
}
