/**
 * Moving a run between runners without an engine (the checkpoint is a planted folder of four files; what
 * is checked is how it travels): the REAL runner servers in this process, a fresh Postgres.
 *   - through both runners' APIs while the old runner answers: the new runner gets checkpoint K byte for
 *     byte and the stored event log line for line
 *   - through the shared checkpoint folder when the old runner is gone
 *   - refused, naming ROLLBOOK_SHARED_CHECKPOINT_DIR, when neither works — and nothing changes
 *   - the import routes refuse a bad archive (a path out of the folder, a link, a stray file), a log
 *     with a gap or another run's events, and a run the runner is running; nothing is written then
 *   npx vitest run --project server features/run-lifecycle/server/run-move.servertest.ts
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "@contracts";
import { registerRunner, runnerById, runnerHandle } from "@/server/runner-client";
import { callerFor, closedPort, createRunningRun, templateFiles, createTestDb, newWorkspace, runEvents, type TestDb } from "@/server/test/harness";
import { startEnginelessRunner, type EnginelessRunner } from "@/server/test/engineless-runner";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { IngestService, ingestEvents } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { moveRunTo } from "./run-move";
import { resumeRun } from "@/features/run-lifecycle/server";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
const runners: EnginelessRunner[] = [];
const tmp: string[] = [];
const FILES = ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"];
const ckDir = (root: string, runId: string, step: number) => path.join(root, runId, "checkpoints", String(step).padStart(4, "0"));

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  for (const r of runners) await r.close();
  for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
  await tdb?.drop();
});

async function runner(name: string, env: Record<string, string> = {}) {
  const unique = `${name}-${runners.length}`;
  const r = await startEnginelessRunner(unique, env);
  runners.push(r);
  const row = await registerRunner(db(), { name: unique, url: r.url, token: r.token });
  return { ...r, id: row.id, name: unique, handle: runnerHandle({ ...row }) };
}

/** A checkpoint folder of four files of random bytes (what the engine would have written). */
function plantCheckpoint(root: string, runId: string, step: number): Record<string, Buffer> {
  const dir = ckDir(root, runId, step);
  fs.mkdirSync(dir, { recursive: true });
  const bytes: Record<string, Buffer> = {};
  for (const f of FILES) fs.writeFileSync(path.join(dir, f), (bytes[f] = f.endsWith(".json") ? Buffer.from(JSON.stringify({ step, f })) : randomBytes(50_000)));
  return bytes;
}

/** The token view's logs of a run (their content does not matter here, only that it travels intact). */
function plantSideLogs(root: string, runId: string): Record<string, string> {
  const logs: Record<string, string> = {};
  for (const name of ["tokens.jsonl", "train-logprobs.jsonl"]) {
    logs[name] = `{"trajectory_id":"t1","from":"${name}"}\n{"trajectory_id":"t2"}\n`;
    fs.mkdirSync(path.join(root, runId), { recursive: true });
    fs.writeFileSync(path.join(root, runId, name), logs[name]);
  }
  return logs;
}

/** A lost train run on `runnerId` whose stored log reaches checkpoint 1 (runEvents' first 12 events). */
async function lostRun(ws: string, runnerId: string): Promise<{ id: string; events: RunEvent[] }> {
  const id = await createRunningRun(db(), ws);
  await db().run.update({ where: { id }, data: { runnerId } });
  const events = runEvents(id).filter((e) => e.type !== "eval.finished" && e.type !== "run.finished");
  await ingestEvents(db(), id, events);
  await db().run.update({ where: { id }, data: { status: "lost", lostSince: new Date() } });
  return { id, events };
}

const runnerEvents = (root: string, runId: string) =>
  fs.readFileSync(path.join(root, runId, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RunEvent);

describe("moving a run to another runner", () => {
  let ws: string;
  beforeAll(async () => {
    ws = await newWorkspace(db());
  });

  it("through both runners' APIs while the old runner answers: checkpoint byte for byte, event log line for line", async () => {
    const a = await runner("api-old");
    const b = await runner("api-new");
    const run = await lostRun(ws, a.id);
    const planted = plantCheckpoint(a.runsDir, run.id, 1);
    const sideLogs = plantSideLogs(a.runsDir, run.id);
    const row = await db().run.findUniqueOrThrow({ where: { id: run.id } });

    const res = await moveRunTo(db(), row, b.handle);
    expect(res).toEqual({ checkpointStep: 1, lastSeq: row.lastSeq, checkpointVia: "runner-api", sideLogs: ["tokens.jsonl", "train-logprobs.jsonl"] });
    for (const [name, text] of Object.entries(sideLogs)) expect(fs.readFileSync(path.join(b.runsDir, run.id, name), "utf8"), name).toBe(text);
    for (const f of FILES) expect(fs.readFileSync(path.join(ckDir(b.runsDir, run.id, 1), f)).equals(planted[f]!), f).toBe(true);
    expect(runnerEvents(b.runsDir, run.id)).toEqual(run.events);
    // The new runner reports the run at the stored position: it continues numbering after it.
    const status = await b.handle.status();
    expect(status.runs.find((r) => r.run_id === run.id)).toMatchObject({ last_seq: row.lastSeq });
  });

  it("through the shared checkpoint folder when the old runner is gone", async () => {
    const shared = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-shared-"));
    tmp.push(shared);
    const dead = await db().runner.create({ data: { name: `dead-${ws}`, url: `http://127.0.0.1:${await closedPort()}`, tokenHash: "x" } });
    const c = await runner("shared-new", { ROLLBOOK_SHARED_CHECKPOINT_DIR: shared });
    const run = await lostRun(ws, dead.id);
    const planted = plantCheckpoint(shared, run.id, 1);
    const sideLogs = plantSideLogs(shared, run.id);
    const row = await db().run.findUniqueOrThrow({ where: { id: run.id } });

    const res = await moveRunTo(db(), row, c.handle);
    expect(res).toMatchObject({ checkpointVia: "shared-or-local", sideLogs: [] });
    for (const [name, text] of Object.entries(sideLogs)) expect(fs.readFileSync(path.join(c.runsDir, run.id, name), "utf8"), name).toBe(text);
    for (const f of FILES) expect(fs.readFileSync(path.join(ckDir(c.runsDir, run.id, 1), f)).equals(planted[f]!), f).toBe(true);
    expect(runnerEvents(c.runsDir, run.id).map((e) => e.seq)).toEqual(run.events.map((e) => e.seq));
    // The share now names c as the run's only publisher: the runner it left cannot put later steps there.
    expect(JSON.parse(fs.readFileSync(path.join(shared, run.id, "owner.json"), "utf8"))).toMatchObject({ runner: c.name });
  });

  it("is refused, naming ROLLBOOK_SHARED_CHECKPOINT_DIR, when the old runner is gone and there is no shared folder; nothing changes", async () => {
    const dead = await db().runner.create({ data: { name: `dead2-${ws}`, url: `http://127.0.0.1:${await closedPort()}`, tokenHash: "x" } });
    const d = await runner("no-share");
    const run = await lostRun(ws, dead.id);
    const before = await db().run.findUniqueOrThrow({ where: { id: run.id } });

    // No target: the dead runner does not answer, so the fallback (d) is asked, and refuses.
    await expect(resumeRun(db(), ws, run.id, { byId: (id) => runnerById(db(), id), fallback: async () => d.handle })).rejects.toMatchObject({
      code: "CONFLICT",
      message: expect.stringMatching(/checkpoint 1 of run .* is not on this runner and ROLLBOOK_SHARED_CHECKPOINT_DIR is not set here/),
    });
    const after = await db().run.findUniqueOrThrow({ where: { id: run.id } });
    expect(after).toMatchObject({ status: "lost", runnerId: dead.id, movedFromRunnerId: null, lastSeq: before.lastSeq });
    expect(fs.existsSync(path.join(d.runsDir, run.id, "events.jsonl"))).toBe(false);
  });

  it("a runner that comes back still running a moved run is told to stop it, and none of its events are stored", async () => {
    const old = await runner("came-back");
    const home = await runner("new-home");
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    // Started on `old` (engineless: it holds the run, waiting for its engine — as a runner cut off mid-run would).
    const started = await callerFor(db(), ws, old.name).runs.start({ experimentId, files: templateFiles({ num_steps: 2, eval_every: 0 }), kind: "train" });
    if (!started.ok) throw new Error(started.error);
    const runId = started.runId;
    await dispatcherFor(db()).idle(); // queued, then started on `old` (the runner that validated it)
    expect(old.server.manager.isRunning(runId)).toBe(true);
    // Meanwhile it was resumed on `home` (what resumeRun records when it moves a run).
    await db().run.update({ where: { id: runId }, data: { runnerId: home.id, movedFromRunnerId: old.id, status: "running", lastHeartbeatAt: new Date() } });

    const ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 200, lostAfterMs: 600_000, log: () => {} });
    await ingest.start();
    try {
      const end = Date.now() + 30_000;
      while ((await db().run.findUniqueOrThrow({ where: { id: runId } })).movedFromRunnerId !== null && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    } finally {
      await ingest.stop();
    }
    expect((await db().run.findUniqueOrThrow({ where: { id: runId } })).movedFromRunnerId).toBeNull();
    expect(old.server.manager.isRunning(runId)).toBe(false);
    expect(runnerEvents(old.runsDir, runId).at(-1)).toMatchObject({ type: "run.finished", payload: { status: "stopped" } });
    // Its run.finished never reached the record: the run is still the new runner's, running.
    expect(await db().runEvent.count({ where: { runId, type: "run.finished" } })).toBe(0);
    expect((await db().run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("running");
  });

  it("the import routes refuse bad archives and logs, and write nothing", async () => {
    const e = await runner("guarded");
    const runId = "guarded-run";
    const put = (p: string, body: Blob | string) =>
      fetch(`${e.url}${p}`, { method: "PUT", headers: { authorization: `Bearer ${e.token}` }, body });
    const archive = async (build: (dir: string) => string[]) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-evil-"));
      tmp.push(dir);
      const entries = build(dir);
      return new Blob([new Uint8Array(await new Promise<Buffer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const stream = tar.create({ gzip: true, cwd: dir, portable: true, preservePaths: true }, entries);
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => resolve(Buffer.concat(chunks)));
        stream.on("error", reject);
      }))]);
    };
    const writeAll = (dir: string) => FILES.forEach((f) => fs.writeFileSync(path.join(dir, f), "x"));

    // A path out of the folder (the archive names ../<file>).
    const outside = `evil-${randomBytes(4).toString("hex")}`;
    const escape = await archive((dir) => {
      writeAll(dir);
      fs.writeFileSync(path.join(dir, "..", outside), "x");
      tmp.push(path.join(dir, "..", outside));
      return [...FILES, `../${outside}`];
    });
    expect((await put(`/runs/${runId}/checkpoints/1/state.tar.gz`, escape)).status).toBe(400);
    expect(fs.existsSync(path.join(e.runsDir, outside)) || fs.existsSync(path.join(e.runsDir, runId, outside))).toBe(false);
    // A link where a file belongs.
    const link = await archive((dir) => {
      for (const f of FILES.slice(0, 3)) fs.writeFileSync(path.join(dir, f), "x");
      fs.symlinkSync("/etc/passwd", path.join(dir, "trainer_state.json"));
      return FILES;
    });
    const linked = await put(`/runs/${runId}/checkpoints/1/state.tar.gz`, link);
    expect(linked.status).toBe(400);
    expect(((await linked.json()) as { error: { message: string } }).error.message).toContain("trainer_state.json");
    // A stray file.
    const stray = await archive((dir) => {
      writeAll(dir);
      fs.writeFileSync(path.join(dir, "run.sh"), "x");
      return [...FILES, "run.sh"];
    });
    expect((await put(`/runs/${runId}/checkpoints/1/state.tar.gz`, stray)).status).toBe(400);
    // Not gzip at all.
    expect((await put(`/runs/${runId}/checkpoints/1/state.tar.gz`, "not an archive")).status).toBe(400);
    expect(fs.existsSync(ckDir(e.runsDir, runId, 1))).toBe(false);

    // Side logs: only the two names; not into another folder.
    expect((await put(`/runs/${runId}/logs/events.jsonl`, "x")).status).toBe(404);
    expect((await put(`/runs/${runId}/logs/..%2F..%2Fevil`, "x")).status).toBe(404);

    // Event logs: a gap, another run's event, a traversal in the run id.
    const ev = (seq: number, run = runId) => JSON.stringify({ run_id: run, seq, ts: 1, type: "run.log", payload: { level: "info", message: "x" } });
    const gap = await put(`/runs/${runId}/events.jsonl`, [ev(1), ev(3)].join("\n"));
    expect(gap.status).toBe(400);
    expect(((await gap.json()) as { error: { message: string } }).error.message).toBe("events.jsonl line 2: seq 3, expected 2");
    expect((await put(`/runs/${runId}/events.jsonl`, [ev(1), ev(2, "other-run")].join("\n"))).status).toBe(400);
    expect((await put(`/runs/..%2Fescape/events.jsonl`, ev(1))).status).toBe(400);
    expect(fs.existsSync(path.join(e.runsDir, runId, "events.jsonl"))).toBe(false);
    // A good log with no token is 401.
    expect((await fetch(`${e.url}/runs/${runId}/events.jsonl`, { method: "PUT", body: ev(1) })).status).toBe(401);
    const ok = await put(`/runs/${runId}/events.jsonl`, ev(1));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ last_seq: 1, checkpoint_step: 0 });
  });
});
