/**
 * The embedded database (PGlite, used when DATABASE_URL is unset) runs the same ingestion SQL: row lock,
 * skipDuplicates, projections, and the repeatable-read reads of the event tail; and the pathology flags,
 * alerts and webhook queue (createManyAndReturn, FOR UPDATE SKIP LOCKED).
 *   npx vitest run --project server server/pglite.servertest.ts
 */
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { servedEvent } from "@contracts";
import { openDatabase, type DbHandle } from "./db";
import { resetEnv } from "./env";
import { callerFor, createRunningRun, newWorkspace, runEvents } from "./test/harness";
import { ingestAndEmit, ingestEvents } from "@/features/run-lifecycle/server";
import { deliverDue } from "@/features/flags/server";
import { setWebhook } from "@/features/flags/server";
import { postIngestSettled } from "@/features/flags/server";

let handle: DbHandle;
let dir: string;
beforeAll(async () => {
  // The webhook receiver listens on 127.0.0.1, which the egress policy refuses unless the operator allows it.
  process.env.EGRESS_ALLOW = "127.0.0.1";
  resetEnv();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-pglite-"));
  handle = await openDatabase({ kind: "pglite", dataDir: dir });
  await handle.migrate();
});
afterAll(async () => {
  await handle?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

it("ingests idempotently on PGlite", async () => {
  const db = handle.prisma;
  const ws = await newWorkspace(db);
  const runId = await createRunningRun(db, ws);
  const log = runEvents(runId);
  await ingestEvents(db, runId, log.slice(0, 8));
  await ingestEvents(db, runId, log);
  await ingestEvents(db, runId, log);
  const run = await db.run.findUniqueOrThrow({ where: { id: runId } });
  expect(run).toMatchObject({ status: "completed", lastSeq: log.length, rolloutCount: 8, errorCount: 1 });
  const events = await callerFor(db, ws).runs.events({ runId, afterSeq: 0, limit: 500 });
  // As every reader is served them: a checkpoint's path on the runner's disk is not the page's (servedEvent).
  expect(events).toEqual(log.map(servedEvent));
  // The charts' rows (refresh_step_series) and their binary read (float8send, base64) on PGlite too.
  const series = await callerFor(db, ws).runs.series({ runId, width: 100, keys: ["reward"] });
  const steps = (await db.step.findMany({ where: { runId }, orderBy: { step: "asc" } })).map((s) => s.step);
  const rows = await db.trajectory.findMany({ where: { runId, split: "train" }, select: { step: true, reward: true } });
  const rewards = (step: number) => rows.filter((r) => r.step === step && r.reward !== null).map((r) => r.reward!);
  const reward = Object.fromEntries(series.charts[0]!.series.map((c) => [c.key, c.values]));
  expect(steps.length).toBeGreaterThan(0);
  expect(series.charts[0]!.x).toEqual(steps);
  expect(reward.min).toEqual(steps.map((st) => Math.min(...rewards(st))));
  expect(reward.max).toEqual(steps.map((st) => Math.max(...rewards(st))));
});

it("runs the runs table's SQL on PGlite: summary, search index function, metric sort, cursor, tags filter", async () => {
  const db = handle.prisma;
  const ws = await newWorkspace(db);
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const runId = await createRunningRun(db, ws);
    await ingestEvents(db, runId, runEvents(runId));
    await db.run.update({ where: { id: runId }, data: { summary: { reward_mean: i / 10 }, tags: i === 1 ? ["baseline"] : [], notes: i === 2 ? "noisy reward" : "" } });
    ids.push(runId);
  }
  const api = callerFor(db, ws);
  expect((await api.runs.list({ q: "nois" })).items.map((r) => r.id)).toEqual([ids[2]]);
  expect((await api.runs.list({ tag: "baseline" })).items.map((r) => r.id)).toEqual([ids[1]]);
  const first = await api.runs.list({ sort: "m:reward_mean", limit: 2 });
  const second = await api.runs.list({ sort: "m:reward_mean", limit: 2, cursor: first.nextCursor });
  expect([...first.items, ...second.items].map((r) => r.id)).toEqual([ids[2], ids[1], ids[0]]);
});

it("runs the pathology, alert and webhook-queue SQL on PGlite", async () => {
  const db = handle.prisma;
  const ws = await newWorkspace(db);
  const received: string[] = [];
  const srv = http.createServer((req, res) => {
    req.on("data", (c: Buffer) => received.push(c.toString("utf8")));
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  try {
    await setWebhook(db, ws, `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`);
    const runId = await createRunningRun(db, ws);
    await ingestAndEmit(db, runId, runEvents(runId));
    await postIngestSettled(runId);
    expect((await db.runFlag.findMany({ where: { runId } })).map((f) => f.rule)).toEqual(["exception_rate"]);
    expect((await db.alert.findMany({ where: { workspaceId: ws } })).map((a) => a.kind).sort()).toEqual(["run.completed", "run.flag"]);
    expect(await deliverDue(db)).toBe(2);
    expect(await db.webhookDelivery.count({ where: { workspaceId: ws, status: "delivered", attempts: 1 } })).toBe(2);
    expect(received).toHaveLength(2);
  } finally {
    await new Promise((r) => srv.close(r));
  }
});
