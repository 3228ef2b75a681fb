/**
 * Event ingestion into Postgres, beside a raw COPY of the same rows in the same run.
 *
 *   node --no-node-snapshot --import tsx bench/ingest.ts [--rollouts 10000] [--reps 3]
 *
 * Per repetition, on a fresh database (created and dropped here; Postgres at TEST_DATABASE_URL, default
 * postgresql://postgres@127.0.0.1:5432/postgres) and a whole synthetic run (server/test/synthetic-events.ts:
 * run.started, the rollouts, a step.finished every 16, run.finished):
 *   pipeline  — the web server's real path: a runner process (server/test/synthetic-runner.ts) holds the run
 *               in its event log; IngestService follows it over the runner's event stream and stores it with
 *               every projection. Timed from follow() until the Run row's lastSeq is the last event.
 *   write     — ingestEvents alone (no runner, no stream), in batches of IngestService's default maxBatch.
 *   copy      — the same event and trajectory rows written with COPY FROM STDIN (pg-copy-streams, CSV),
 *               serialisation included: the floor for getting these rows into these tables.
 * Prints events/s of each and the ratios (after one uncounted warm-up repetition); the medians over
 * repetitions last. `uptime` is printed first and last.
 */
import { execSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { RunEvent } from "@contracts";
import { openDatabase } from "../server/db";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { registerRunner, runnerById } from "../server/runner-client";
import { IngestService, ingestEvents } from "@/features/run-lifecycle/server";
import { trajectoryToRow } from "../server/run-convert";
import { spawnTs, stopChild } from "../server/test/child-process";
import { createRunningRun, newWorkspace } from "../server/test/harness";
import { syntheticStoredEvents } from "../server/test/synthetic-events";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROLLOUTS = arg("rollouts", 10_000);
const REPS = arg("reps", 3);
const BATCH = 2_000;
const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const uptime = () => execSync("uptime").toString().trim();

/** One CSV field: quoted, quotes doubled; null is the unquoted empty field (COPY's NULL in CSV). */
const csv = (v: string | number | null): string => (v === null ? "" : `"${String(v).replace(/"/g, '""')}"`);
const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

async function copyRows(pool: pg.Pool, sql: string, lines: () => Generator<string>): Promise<void> {
  const client = await pool.connect();
  try {
    await pipeline(Readable.from(lines()), client.query(copyFrom(sql)));
  } finally {
    client.release();
  }
}

/** The raw floor: the run's event rows and trajectory rows, each table in one COPY. */
async function copyRun(pool: pg.Pool, runId: string, events: RunEvent[]): Promise<void> {
  await copyRows(pool, `COPY "RunEvent" ("runId", "seq", "type", "payload", "ts") FROM STDIN WITH (FORMAT csv)`, function* () {
    for (const e of events) yield `${csv(runId)},${e.seq},${csv(e.type)},${csv(JSON.stringify(e.payload))},${csv(new Date(e.ts).toISOString())}\n`;
  });
  await copyRows(
    pool,
    `COPY "Trajectory" ("id", "runId", "seq", "step", "group", "taskIndex", "split", "task", "messages", "reward", "metrics", "error", "model", "tokens", "timings", "logs") FROM STDIN WITH (FORMAT csv)`,
    function* () {
      for (const e of events) {
        if (e.type !== "rollout.finished") continue;
        const r = trajectoryToRow(runId, e.seq, e.payload);
        yield [r.id, r.runId, r.seq, r.step, r.group, r.taskIndex, r.split, json(r.task), json(r.messages), r.reward, json(r.metrics), json(r.error), r.model, json(r.tokens), json(r.timings), json(r.logs)]
          .map((v) => csv(v as string | number | null))
          .join(",") + "\n";
      }
    },
  );
}

async function untilStored(db: Awaited<ReturnType<typeof openDatabase>>["prisma"], runId: string, lastSeq: number): Promise<void> {
  for (;;) {
    const run = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true } });
    if (run.lastSeq >= lastSeq) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function main(): Promise<void> {
  console.log(`ingest bench: ${ROLLOUTS} rollouts per run, ${REPS} repetitions; ${os.cpus().length} CPUs; ${uptime()}`);
  const name = `rollbook_bench_ingest_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  await handle.migrate();
  const db = handle.prisma;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-bench-ingest-"));
  const token = randomBytes(24).toString("hex");
  const runner = await spawnTs("server/test/synthetic-runner.ts", { RUNNER_TOKEN: token, ROLLBOOK_RUNS_DIR: runsDir, RUNNER_NAME: "bench" }, /^SYNTHETIC RUNNER READY/);
  const results: { pipeline: number; write: number; copy: number }[] = [];
  try {
    const runnerId = (await registerRunner(db, { name: "bench", url: `http://127.0.0.1:${runner.port}`, token })).id;
    const ws = await newWorkspace(db);
    // Repetition 0 is a warm-up (1,000 rollouts, not counted): the first transactions of a fresh process
    // and database pay for connections, query planning and JIT, which a sustained stream does not.
    for (let rep = 0; rep <= REPS; rep++) {
      const rollouts = rep === 0 ? 1_000 : ROLLOUTS;
      // pipeline: the runner holds the whole run; the ingester catches up from seq 0.
      const runId = await createRunningRun(db, ws);
      await db.run.update({ where: { id: runId }, data: { runnerId } });
      runner.proc.stdin!.write(JSON.stringify({ cmd: "bulk", runId, rollouts }) + "\n");
      const emitted = await runner.waitFor(new RegExp(`^EMITTED ${runId} `), 120_000);
      const total = Number(emitted.split(" ").at(-1));
      const ingest = new IngestService(db, { runnerFor: (id) => runnerById(db, id), scanMs: 3_600_000, log: (m) => console.warn(`[ingest] ${m}`) });
      let t = performance.now();
      ingest.follow(runId);
      await untilStored(db, runId, total);
      const pipelineS = (performance.now() - t) / 1000;
      await ingest.stop();

      // write: the same kind of run through ingestEvents alone.
      const writeRun = await createRunningRun(db, ws);
      const events = syntheticStoredEvents(writeRun, rollouts);
      t = performance.now();
      for (let i = 0; i < events.length; i += BATCH) await ingestEvents(db, writeRun, events.slice(i, i + BATCH));
      const writeS = (performance.now() - t) / 1000;

      // copy: the same rows again, for a third run, by COPY.
      const copyRun_ = await createRunningRun(db, ws);
      const copyEvents = syntheticStoredEvents(copyRun_, rollouts);
      t = performance.now();
      await copyRun(pool, copyRun_, copyEvents);
      const copyS = (performance.now() - t) / 1000;

      const r = { pipeline: total / pipelineS, write: events.length / writeS, copy: copyEvents.length / copyS };
      if (rep === 0) {
        console.log(`warm-up: ${total} events — pipeline ${r.pipeline.toFixed(0)}/s, write ${r.write.toFixed(0)}/s, COPY ${r.copy.toFixed(0)}/s (not counted)`);
        continue;
      }
      results.push(r);
      console.log(
        `rep ${rep}: ${total} events — pipeline ${r.pipeline.toFixed(0)}/s (${pipelineS.toFixed(2)} s), write ${r.write.toFixed(0)}/s, ` +
          `COPY ${r.copy.toFixed(0)}/s; pipeline/COPY ${(r.pipeline / r.copy).toFixed(2)}, write/COPY ${(r.write / r.copy).toFixed(2)}`,
      );
    }
    const m = { pipeline: median(results.map((r) => r.pipeline)), write: median(results.map((r) => r.write)), copy: median(results.map((r) => r.copy)) };
    console.log(
      `median of ${REPS}: pipeline ${m.pipeline.toFixed(0)} events/s, write ${m.write.toFixed(0)} events/s, COPY ${m.copy.toFixed(0)} events/s; ` +
        `pipeline/COPY ${median(results.map((r) => r.pipeline / r.copy)).toFixed(2)}, write/COPY ${median(results.map((r) => r.write / r.copy)).toFixed(2)}`,
    );
    console.log(uptime());
  } finally {
    await stopChild(runner);
    await pool.end();
    await handle.close();
    await dropPgDatabase(adminUrl, name);
    fs.rmSync(runsDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
