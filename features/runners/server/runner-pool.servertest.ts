/**
 * The runner pool on real parts: two REAL runner processes (gpu-runner/src/server.ts) sharing one REAL
 * engine (SmolLM2-135M on CPU, spawned by the first runner), real Postgres, the real dispatcher, heartbeat
 * monitor and ingestion.
 *   npx vitest run --project server features/runners/server/runner-pool.servertest.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { resetEnv } from "@/server/env";
import { registerRunner, runnerById, runnerHandle, tokenHash, type RunnerHandle } from "@/server/runner-client";
import { spawnTs, stopChild, type Child } from "@/server/test/child-process";
import { callerFor, closedPort, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { IngestService } from "@/features/run-lifecycle/server";
import { RunnerHeartbeat } from "@/features/run-lifecycle/server";
import { getRun } from "@/features/runs/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";

const TOKEN = "pool-runner-token-0123456789";
const ENGINE_TOKEN = "pool-engine-token-0123456789";
const ENGINE_PORT = 8301;
const PORTS = { a: 4301, b: 4311 } as const;
const LOST_AFTER_MS = 3_000;
const HEARTBEAT_MS = 250;
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);

let tdb: TestDb;
const db = () => tdb.handle.prisma;
const children: Partial<Record<keyof typeof PORTS, Child>> = {};
const dirs: string[] = [];
let ingest: IngestService;
let monitor: RunnerHeartbeat;
const runnerIds: Partial<Record<keyof typeof PORTS, string>> = {};
const dispatchLog: string[] = [];

async function waitFor<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 120_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`timed out; last value: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A real runner process; `a` spawns the engine, `b` uses it (ENGINE_URL). */
async function startRunner(which: keyof typeof PORTS): Promise<Child> {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-pool-${which}-`));
  dirs.push(runsDir);
  const own = which === "a";
  const child = await spawnTs(
    "gpu-runner/src/server.ts",
    {
      RUNNER_TOKEN: TOKEN,
      RUNNER_PORT: String(PORTS[which]),
      RUNNER_NAME: `pool-${which}`,
      RUNNER_CAPACITY: "2",
      ROLLBOOK_RUNS_DIR: runsDir,
      ENGINE_TOKEN,
      ENGINE_URL: own ? "" : `http://127.0.0.1:${ENGINE_PORT}`,
      ENGINE_PORT: String(ENGINE_PORT),
    },
    /RUNNER READY/,
  );
  children[which] = child;
  return child;
}

const handleFor = (which: keyof typeof PORTS): RunnerHandle =>
  runnerHandle({ id: which, name: `pool-${which}`, url: `http://127.0.0.1:${PORTS[which]}`, tokenHash: tokenHash(TOKEN), tokenCipher: null, workspaceId: null }, TOKEN);

/** A dry run that needs the engine only briefly (1 group of 2 rollouts, 4 tokens). */
// A generous rollout timeout: on a loaded 2-core machine four runs share one CPU engine.
const quickFiles = () =>
  templateFiles({ groups_per_step: 1, rollouts_per_group: 2, max_concurrency: 2, sampling: { temperature: 1.0, max_tokens: 4 }, limits: { rollout_timeout_ms: 600_000 } });
/** A dry run that keeps the engine busy for a while (stopped by the test). */
const longFiles = () => templateFiles({ groups_per_step: 8, rollouts_per_group: 8, max_concurrency: 4, sampling: { temperature: 1.0, max_tokens: 200 } });

beforeAll(async () => {
  if (!engineAvailable) return;
  // The runners a workspace registers here listen on 127.0.0.1, which the egress policy refuses unless the operator allows it.
  process.env.EGRESS_ALLOW = "127.0.0.1";
  resetEnv();
  tdb = await createTestDb();
  await startRunner("a");
  await waitFor(() => handleFor("a").status().catch(() => null), (s) => s?.engine.state === "ready", 540_000);
  await startRunner("b");
  runnerIds.a = (await registerRunner(db(), { name: "pool-a", url: `http://127.0.0.1:${PORTS.a}`, token: TOKEN })).id;
  runnerIds.b = (await registerRunner(db(), { name: "pool-b", url: `http://127.0.0.1:${PORTS.b}`, token: TOKEN })).id;
  ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 200, lostAfterMs: LOST_AFTER_MS, log: () => {} });
  await ingest.start();
  monitor = new RunnerHeartbeat(db(), { heartbeatMs: HEARTBEAT_MS, lostAfterMs: LOST_AFTER_MS, log: () => {} });
  monitor.start();
  dispatcherFor(db(), { log: (m) => dispatchLog.push(m) });
  await monitor.beat();
}, 600_000);

afterAll(async () => {
  await monitor?.stop();
  if (tdb) await dispatcherFor(db()).stop();
  await ingest?.stop();
  await stopChild(children.b);
  await stopChild(children.a);
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  await tdb?.drop();
}, 60_000);

async function setup() {
  const ws = await newWorkspace(db());
  const api = callerFor(db(), ws, "pool-a");
  const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
  return { ws, api, experimentId };
}

describe.skipIf(!engineAvailable)("runner pool (2 real runners, 1 real engine)", () => {
  it("the runners report device, model and capacity, recorded by the heartbeat", async () => {
    const { api } = await setup();
    const list = await api.runners.list();
    const a = list.find((r) => r.name === "pool-a");
    expect(a).toMatchObject({ health: "healthy", capacity: 2, models: ["SmolLM2-135M-Instruct"], scope: "instance", device: "cpu" });
    expect(a?.lastSeenAt).toBeInstanceOf(Date);
  });

  it("register: a wrong URL or a wrong token is a clear error naming the field, and saves nothing", async () => {
    const { ws, api } = await setup();
    const wrongUrl = await api.runners.register({ name: "gpu-1", url: `http://127.0.0.1:${await closedPort()}`, token: TOKEN }).catch((e: unknown) => e);
    expect((wrongUrl as Error).message).toMatch(/^url: no runner answered at http:\/\/127\.0\.0\.1:\d+/);
    const wrongToken = await api.runners.register({ name: "gpu-1", url: `http://127.0.0.1:${PORTS.b}`, token: "not-the-token-000" }).catch((e: unknown) => e);
    expect((wrongToken as Error).message).toMatch(/^token: the runner at http:\/\/127\.0\.0\.1:4311 refused this token/);
    const notAUrl = await api.runners.register({ name: "gpu-1", url: "gpu box", token: TOKEN }).catch((e: unknown) => e);
    expect((notAUrl as Error).message).toMatch(/^url: 'gpu box' is not a URL/);
    expect(await db().runner.count({ where: { workspaceId: ws } })).toBe(0);

    // The right pair is saved, with what the runner reports; then it can be disabled and removed.
    const ok = await api.runners.register({ name: "gpu-1", url: `http://127.0.0.1:${PORTS.b}/`, token: TOKEN, capacity: 1 });
    const row = await db().runner.findUniqueOrThrow({ where: { id: ok.id } });
    expect(row).toMatchObject({ workspaceId: ws, url: `http://127.0.0.1:${PORTS.b}`, health: "healthy", capacity: 1, tokenHash: tokenHash(TOKEN) });
    // Encrypted at rest: the token itself is nowhere in the row.
    expect(JSON.stringify(row)).not.toContain(TOKEN);
    // Another workspace neither sees it nor can change it.
    const other = await setup();
    expect((await other.api.runners.list()).map((r) => r.name)).not.toContain("gpu-1");
    await expect(other.api.runners.remove({ id: ok.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await api.runners.update({ id: ok.id, enabled: false });
    expect((await api.runners.list()).find((r) => r.id === ok.id)).toMatchObject({ enabled: false });
    await api.runners.remove({ id: ok.id });
    expect(await db().runner.count({ where: { workspaceId: ws } })).toBe(0);
  });

  it("a queue of 20 runs on 2 runners of capacity 2: all complete, never more than 2 at once on either", async () => {
    const { api, experimentId } = await setup();
    let maxSeen = { a: 0, b: 0 };
    let sampling = true;
    // The runners' own word, sampled while the queue drains.
    const sampler = (async () => {
      while (sampling) {
        for (const which of ["a", "b"] as const) {
          // A busy runner on a loaded machine may answer late: that sample is skipped, not failed.
          const s = await handleFor(which).status({ timeoutMs: 30_000 }).catch(() => null);
          const active = s?.runs.filter((r) => r.status === "running").length ?? 0;
          maxSeen = { ...maxSeen, [which]: Math.max(maxSeen[which], active) };
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await api.runs.start({ experimentId, files: quickFiles(), kind: "dry-run" });
      if (!res.ok) throw new Error(res.error);
      ids.push(res.runId);
    }
    const done = await waitFor(
      () => db().run.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, error: true, runnerId: true, startedAt: true, finishedAt: true } }),
      (rows) => rows.every((r) => r.status === "completed" || r.status === "failed"),
      600_000,
    );
    sampling = false;
    await sampler;
    expect(done.filter((r) => r.status !== "completed").map((r) => `${r.id}: ${r.status} (${r.error})`)).toEqual([]);
    // Both runners served the queue.
    expect(new Set(done.map((r) => r.runnerId))).toEqual(new Set([runnerIds.a, runnerIds.b]));
    expect(maxSeen.a).toBeLessThanOrEqual(2);
    expect(maxSeen.b).toBeLessThanOrEqual(2);
    expect(Math.max(maxSeen.a, maxSeen.b)).toBeGreaterThan(0);
    // And by the stored times (started → finished as the web server recorded them): at most 2 overlap.
    for (const id of [runnerIds.a, runnerIds.b]) {
      const spans = done.filter((r) => r.runnerId === id).map((r) => [r.startedAt!.getTime(), r.finishedAt!.getTime()] as const);
      for (const [start] of spans) expect(spans.filter(([s, f]) => s <= start && start < f).length).toBeLessThanOrEqual(2);
    }
  }, 660_000);

  it("queue position, and stopping a queued run: stopped at once, never dispatched", async () => {
    const { ws, api, experimentId } = await setup();
    await db().runner.updateMany({ data: { enabled: false } });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await api.runs.start({ experimentId, files: quickFiles(), kind: "dry-run" });
        if (!res.ok) throw new Error(res.error);
        ids.push(res.runId);
      }
      const positions = await Promise.all(ids.map(async (id) => (await getRun(db(), ws, id)).queuePosition));
      expect(positions).toEqual([1, 2, 3]);
      // The runs table says the same, from one query for the page.
      const listed = await api.runs.list({ sort: "createdAt", dir: "asc", limit: 50 });
      expect(listed.items.filter((r) => ids.includes(r.id)).map((r) => r.queuePosition)).toEqual([1, 2, 3]);
      expect(await api.runs.stop({ id: ids[1]! })).toEqual({ id: ids[1], status: "stopped" });
      expect((await getRun(db(), ws, ids[2]!)).queuePosition).toBe(2);
      await db().runner.updateMany({ data: { enabled: true } });
      await monitor.beat();
      dispatcherFor(db()).kick();
      await waitFor(() => db().run.findMany({ where: { id: { in: [ids[0]!, ids[2]!] } } }), (rows) => rows.every((r) => r.status === "completed"), 300_000);
      const stopped = await db().run.findUniqueOrThrow({ where: { id: ids[1]! } });
      expect(stopped).toMatchObject({ status: "stopped", runnerId: null, startedAt: null });
      for (const which of ["a", "b"] as const) expect((await handleFor(which).status()).runs.map((r) => r.run_id)).not.toContain(ids[1]);
    } finally {
      await db().runner.updateMany({ data: { enabled: true } });
    }
  }, 360_000);

  it("dispatch: a runner that refuses fails the run with diagnostics; an unreachable one requeues it to another", async () => {
    const { ws, api, experimentId } = await setup();
    // No heartbeats for now: the dispatcher itself must find the down runner out.
    await monitor.stop();
    // Unreachable: a registered runner that is down, the only one enabled for a moment.
    const down = await registerRunner(db(), { name: `down-${ws}`, url: `http://127.0.0.1:${await closedPort()}`, token: TOKEN });
    await db().runner.update({ where: { id: down.id }, data: { capacity: 10 } });
    await db().runner.updateMany({ where: { id: { in: [runnerIds.a!, runnerIds.b!] } }, data: { enabled: false } });
    let refusedId: string;
    let movedId: string;
    try {
      const moved = await api.runs.start({ experimentId, files: quickFiles(), kind: "dry-run" });
      if (!moved.ok) throw new Error(moved.error);
      movedId = moved.runId;
      // It went to the down runner (the only one enabled), came back to the queue, and the runner is marked.
      await waitFor(() => db().runner.findUniqueOrThrow({ where: { id: down.id } }), (r) => r.health === "unreachable");
      await dispatcherFor(db()).idle();
      expect(dispatchLog.some((l) => l.startsWith(`run ${movedId}: runner down-${ws} unreachable`))).toBe(true);
      // An unreachable runner gets no more runs: this one just waits.
      const refusedFiles = { ...quickFiles(), "scenario.ts": `${quickFiles()["scenario.ts"]}\n// to be broken\n` };
      const refused = await api.runs.start({ experimentId, files: refusedFiles, kind: "dry-run" });
      if (!refused.ok) throw new Error(refused.error);
      refusedId = refused.runId;
      await dispatcherFor(db()).idle();
      expect(await db().run.findMany({ where: { id: { in: [refusedId, movedId] } }, select: { status: true, runnerId: true } })).toEqual([
        { status: "queued", runnerId: null },
        { status: "queued", runnerId: null },
      ]);
      // One run's stored code breaks before a runner takes it (as if edited under it): the runner refuses it.
      // (Its own version: the moved run's files differ by a comment.)
      const row = await db().run.findUniqueOrThrow({ where: { id: refusedId }, select: { versionId: true } });
      expect(row.versionId).not.toBe((await db().run.findUniqueOrThrow({ where: { id: movedId } })).versionId);
      await db().experimentVersion.update({
        where: { id: row.versionId },
        data: { files: { ...refusedFiles, "reward.ts": "export default function reward(: number {\n" } },
      });
    } finally {
      await db().runner.updateMany({ where: { id: { in: [runnerIds.a!, runnerIds.b!] } }, data: { enabled: true } });
      monitor = new RunnerHeartbeat(db(), { heartbeatMs: HEARTBEAT_MS, lostAfterMs: LOST_AFTER_MS, log: () => {} });
      monitor.start();
    }
    dispatcherFor(db()).kick();
    const failed = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: refusedId } }), (r) => r.status === "failed");
    expect(failed.error).toMatch(/refused by runner 'pool-[ab]': reward\.ts:1:/);
    expect((await getRun(db(), ws, refusedId)).diagnostics[0]).toMatchObject({ file: "reward.ts", line: 1 });
    const moved = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: movedId } }), (r) => r.status === "completed", 300_000);
    expect([runnerIds.a, runnerIds.b]).toContain(moved.runnerId);
    await db().runner.update({ where: { id: down.id }, data: { enabled: false } });
  }, 360_000);

  it("a runner killed with SIGKILL: its running runs are `lost` within the heartbeat timeout", async () => {
    const { ws, api, experimentId } = await setup();
    // Only b takes runs; two long ones.
    await db().runner.update({ where: { id: runnerIds.a! }, data: { enabled: false } });
    const ids: string[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const res = await api.runs.start({ experimentId, files: longFiles(), kind: "dry-run" });
        if (!res.ok) throw new Error(res.error);
        ids.push(res.runId);
      }
      await waitFor(() => db().run.findMany({ where: { id: { in: ids } } }), (rows) => rows.every((r) => r.status === "running" && r.runnerId === runnerIds.b));
      const killedAt = Date.now();
      const b = children.b!;
      children.b = undefined;
      const exited = new Promise((r) => b.proc.once("exit", r));
      b.proc.kill("SIGKILL");
      await exited;
      const lost = await waitFor(() => db().run.findMany({ where: { id: { in: ids } } }), (rows) => rows.every((r) => r.status === "lost"), 60_000);
      const tookMs = Date.now() - killedAt;
      // RUNNER_LOST_AFTER_MS after its last answer, found by the next heartbeat (slack for a loaded machine).
      expect(tookMs).toBeLessThan(LOST_AFTER_MS + 10 * HEARTBEAT_MS + 5_000);
      for (const r of lost) expect(r.lostSince).not.toBeNull();
      expect((await getRun(db(), ws, ids[0]!)).status).toBe("lost");
      expect((await db().runner.findUniqueOrThrow({ where: { id: runnerIds.b! } })).health).toBe("unreachable");
    } finally {
      await db().runner.update({ where: { id: runnerIds.a! }, data: { enabled: true } });
      for (const id of ids) await api.runs.stop({ id }).catch(() => undefined);
    }
  }, 300_000);
});
