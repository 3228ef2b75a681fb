/**
 * The bulk writes of ingestion, as one SQL statement each: a batch of events (or steps) goes to Postgres as
 * a handful of array parameters and is expanded server-side with unnest(), then inserted with ON CONFLICT
 * DO NOTHING (the skip-duplicates half of ingestion's idempotency); trajectories are projected from the
 * stored events' payloads.
 *
 * Hand-written rather than Prisma's createMany because createMany binds every column of every row as its
 * own parameter and serialises each JSON value through the query engine: at a few hundred rows per batch
 * that, not Postgres, was what held ingestion to ~1,600 events/s. Arrays keep the parameter count at
 * one per column whatever the batch size; the same SQL runs on PGlite.
 */
import type { RunEvent, StepMetrics } from "@contracts";
import type { Tx } from "@/server/db-types";

/**
 * Timestamps travel as ISO text (UTC, "…Z"): a cast to Prisma's `timestamp(3)` (without time zone) reads
 * the wall-clock part, which is the UTC time Prisma itself stores.
 */
const isoText = (ms: number): string => new Date(ms).toISOString();

/**
 * The batch travels as ONE json document, expanded with jsonb_to_recordset: the payloads are parsed once, as
 * part of it. As a text[] of per-payload JSON strings (what this did before) every payload was escaped into an
 * array literal by the driver and unescaped again by Postgres before its own parse: the costliest statement of
 * a batch (bench/ingest.ts, docs/benchmarks.md "Ingestion vs a raw COPY").
 */
export async function insertEvents(tx: Tx, runId: string, events: readonly RunEvent[]): Promise<void> {
  const rows = JSON.stringify(events.map((e) => ({ seq: e.seq, type: e.type, payload: e.payload, ts: isoText(e.ts), attempt: e.attempt ?? null })));
  await tx.$executeRaw`
    INSERT INTO "RunEvent" ("runId", "seq", "type", "payload", "ts", "attempt")
    SELECT ${runId}, u.seq, u.type, u.payload, u.ts::timestamp(3), u.attempt
    FROM jsonb_to_recordset(${rows}::jsonb) AS u(seq int, type text, payload jsonb, ts text, attempt int)
    ON CONFLICT DO NOTHING`;
}

/** One row per step (the caller passes each step once): a step already stored takes the newer metrics. */
export async function upsertSteps(tx: Tx, runId: string, steps: readonly StepMetrics[]): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO "Step" ("runId", "step", "metrics")
    SELECT ${runId}, u.step, u.metrics::jsonb
    FROM unnest(${steps.map((s) => s.step)}::int[], ${steps.map((s) => JSON.stringify(s))}::text[]) AS u(step, metrics)
    ON CONFLICT ("runId", "step") DO UPDATE SET "metrics" = EXCLUDED."metrics"`;
}

/**
 * The trajectories of a batch's rollout.finished events, projected in SQL from those events' payloads as
 * insertEvents just stored them (same transaction): each trajectory's JSON then crosses the wire and is
 * parsed once, not twice. Field for field what run-convert.ts's trajectoryToRow writes: a missing task is
 * JSON null, a null error is SQL NULL, metrics and logs default to {} and [].
 */
export async function insertTrajectoriesFromEvents(tx: Tx, runId: string, seqs: readonly number[]): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO "Trajectory" ("id", "runId", "seq", "step", "group", "taskIndex", "split", "task", "messages",
      "reward", "metrics", "error", "model", "tokens", "timings", "logs")
    SELECT p->>'id', e."runId", e."seq", (p->>'step')::int, (p->>'group')::int, (p->>'task_index')::int, p->>'split',
      COALESCE(p->'task', 'null'::jsonb), p->'messages', (p->>'reward')::float8, COALESCE(p->'metrics', '{}'::jsonb),
      NULLIF(p->'error', 'null'::jsonb), p->>'model', p->'tokens', p->'timings', COALESCE(p->'logs', '[]'::jsonb)
    FROM (SELECT "runId", "seq", "payload" AS p FROM "RunEvent" WHERE "runId" = ${runId} AND "seq" = ANY(${seqs}::int[])) AS e
    ON CONFLICT DO NOTHING`;
}
