/**
 * The bulk writes of ingestion, as one SQL statement each: a batch of events (or trajectories) goes to
 * Postgres as a handful of array parameters and is expanded server-side with unnest(), then inserted with
 * ON CONFLICT DO NOTHING (the skip-duplicates half of ingestion's idempotency).
 *
 * Hand-written rather than Prisma's createMany because createMany binds every column of every row as its
 * own parameter and serialises each JSON value through the query engine: at a few hundred rows per batch
 * that, not Postgres, was what held ingestion to ~1,600 events/s. Arrays keep the parameter count at
 * one per column whatever the batch size; the same SQL runs on PGlite.
 */
import type { RunEvent } from "@contracts";
import type { Tx } from "./types";
import type { trajectoryToRow } from "./run-convert";

export type TrajectoryRow = ReturnType<typeof trajectoryToRow>;

/** JSON text for a jsonb column; `undefined` (Prisma's "leave unset") becomes SQL NULL. */
const jsonText = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/**
 * Timestamps travel as ISO text (UTC, "…Z"): a cast to Prisma's `timestamp(3)` (without time zone) reads
 * the wall-clock part, which is the UTC time Prisma itself stores.
 */
const isoText = (ms: number): string => new Date(ms).toISOString();

export async function insertEvents(tx: Tx, runId: string, events: readonly RunEvent[]): Promise<void> {
  const seqs = events.map((e) => e.seq);
  const types = events.map((e) => e.type);
  const payloads = events.map((e) => JSON.stringify(e.payload));
  const ts = events.map((e) => isoText(e.ts));
  await tx.$executeRaw`
    INSERT INTO "RunEvent" ("runId", "seq", "type", "payload", "ts")
    SELECT ${runId}, u.seq, u.type, u.payload::jsonb, u.ts::timestamp(3)
    FROM unnest(${seqs}::int[], ${types}::text[], ${payloads}::text[], ${ts}::text[]) AS u(seq, type, payload, ts)
    ON CONFLICT DO NOTHING`;
}

export async function insertTrajectories(tx: Tx, rows: readonly TrajectoryRow[]): Promise<void> {
  const col = <T>(f: (r: TrajectoryRow) => T): T[] => rows.map(f);
  const runId = rows[0]!.runId;
  await tx.$executeRaw`
    INSERT INTO "Trajectory" ("id", "runId", "seq", "step", "group", "taskIndex", "split", "task", "messages",
      "reward", "metrics", "error", "model", "tokens", "timings", "logs")
    SELECT u.id, ${runId}, u.seq, u.step, u.grp, u.task_index, u.split, u.task::jsonb, u.messages::jsonb,
      u.reward, u.metrics::jsonb, u.error::jsonb, u.model, u.tokens::jsonb, u.timings::jsonb, u.logs::jsonb
    FROM unnest(
      ${col((r) => r.id)}::text[], ${col((r) => r.seq)}::int[], ${col((r) => r.step)}::int[],
      ${col((r) => r.group)}::int[], ${col((r) => r.taskIndex)}::int[], ${col((r) => r.split)}::text[],
      ${col((r) => jsonText(r.task))}::text[], ${col((r) => jsonText(r.messages))}::text[],
      ${col((r) => r.reward)}::float8[], ${col((r) => jsonText(r.metrics))}::text[],
      ${col((r) => jsonText(r.error))}::text[], ${col((r) => r.model)}::text[],
      ${col((r) => jsonText(r.tokens))}::text[], ${col((r) => jsonText(r.timings))}::text[],
      ${col((r) => jsonText(r.logs))}::text[]
    ) AS u(id, seq, step, grp, task_index, split, task, messages, reward, metrics, error, model, tokens, timings, logs)
    ON CONFLICT DO NOTHING`;
}
