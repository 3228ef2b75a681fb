/**
 * A runner killed mid-step, its run resumed on ANOTHER runner from the newest checkpoint — on real parts:
 * runner 1 a child process (the real runner with its real SmolLM2-135M engine on CPU), runner 2 the real
 * runner in this process on the server tests' shared engine (its own where none runs; runner 1's engine is
 * its own: it dies with runner 1), both with ROLLBOOK_SHARED_CHECKPOINT_DIR set to one folder,
 * a fresh Postgres, and the real ingestion (IngestService) following the run.
 *
 *   train run (2 steps) on runner 1 -> checkpoint 1 recorded, step 2 sampling -> SIGKILL runner 1 (its
 *   engine exits with it) -> the scan marks the run lost -> runs.resume (no target: runner 1 does not
 *   answer, so the configured runner 2) -> completes on runner 2
 *
 * and then what the move promises: steps 1 and 2 each finished exactly once in the event log and once in
 * the Step table, every rollout id once, seq 1..lastSeq without a gap, runner 2's checkpoint 1 byte for
 * byte the one runner 1 wrote (adapter AND optimizer state: what step 2 trained from), and the old
 * runner's stale events refused by ingestion.
 *   npx vitest run --project server features/run-lifecycle/server/run-resume-move.servertest.ts
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startRunnerServer, type RunnerServer } from "@/gpu-runner/src/server";
import { registerRunner, resolveRunner, runnerById } from "@/server/runner-client";
import { sharedEngine } from "@/gpu-runner/src/test-support/shared-engine";
import { spawnTs, stopChild, type Child } from "@/server/test/child-process";
import { callerFor, createTestDb, templateFiles, newWorkspace, type TestDb } from "@/server/test/harness";
import { IngestService, ingestEvents } from "./ingest";
import { rowToEvent } from "@/server/run-convert";
import { resumeRun } from "./run-resume";
import { ensureDefaultExperiment } from "@/features/workspace/server";

// This helper's ports (web 3302, runners 4302/4312, engines 8302/8312); override for another checkout.
const PORTS = {
  runner1: Number(process.env.RESUME_TEST_RUNNER1_PORT ?? 4302),
  engine1: Number(process.env.RESUME_TEST_ENGINE1_PORT ?? 8302),
  runner2: Number(process.env.RESUME_TEST_RUNNER2_PORT ?? 4312),
  engine2: Number(process.env.RESUME_TEST_ENGINE2_PORT ?? 8312),
};
const TOKEN1 = "resume-move-runner-1-token-0123456789";
const TOKEN2 = "resume-move-runner-2-token-0123456789";
const LOST_AFTER_MS = 3_000;
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN1 }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`run-resume-move.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);

let tdb: TestDb;
let runner1: Child | undefined;
let runner2: RunnerServer | undefined;
let ingest: IngestService | undefined;
const tmp: string[] = [];
const db = () => tdb.handle.prisma;
const mkdtemp = (name: string) => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-move-${name}-`));
  tmp.push(d);
  return d;
};

async function until<T>(what: string, ms: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const sha = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");
const CKPT_FILES = ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"];

describe.skipIf(!engineAvailable)("a run whose runner is killed mid-step resumes on another runner (real runners, real engines)", () => {
  let ws: string;
  let runId: string;
  let runsDir1: string;
  let runsDir2: string;
  let sharedDir: string;
  let runner1Id: string;
  let runner2Id: string;
  let killedAt: number;
  const logs: string[] = [];

  beforeAll(async () => {
    tdb = await createTestDb();
    runsDir1 = mkdtemp("r1");
    sharedDir = mkdtemp("shared");
    const common = { ROLLBOOK_SHARED_CHECKPOINT_DIR: sharedDir, ENGINE_URL: "", ENGINE_TOKEN: "" };
    // Runner 1's engine and runner 2's load at once (minutes on a busy machine; the shared one may be up already).
    const [child, server] = await Promise.all([
      spawnTs(
        "gpu-runner/src/server.ts",
        { ...common, RUNNER_PORT: String(PORTS.runner1), ENGINE_PORT: String(PORTS.engine1), RUNNER_TOKEN: TOKEN1, ROLLBOOK_RUNS_DIR: runsDir1, RUNNER_NAME: "move-1" },
        /RUNNER READY/,
      ),
      sharedEngine().then((shared) => {
        // Runner 2 on the shared engine reads and writes that engine's runs folder (the broker removes it).
        runsDir2 = shared?.runsDir ?? mkdtemp("r2");
        const engine2 = shared ? { ENGINE_URL: shared.url, ENGINE_TOKEN: shared.token } : { ENGINE_PORT: String(PORTS.engine2) };
        return startRunnerServer({
          env: loadRunnerEnv({ ...process.env, ...common, ...engine2, RUNNER_PORT: String(PORTS.runner2), RUNNER_TOKEN: TOKEN2, ROLLBOOK_RUNS_DIR: runsDir2, RUNNER_NAME: "move-2" }),
          onEngineLog: (l) => logs.push(l),
        });
      }),
    ]);
    runner1 = child;
    runner2 = server;
    try {
      await Promise.all([runner1.waitFor(/ENGINE READY/, 540_000), runner2.supervisor.waitReady(540_000)]);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- engine 2 log ---\n${logs.slice(-30).join("\n")}`);
    }
    runner1Id = (await registerRunner(db(), { name: "move-1", url: `http://127.0.0.1:${PORTS.runner1}`, token: TOKEN1 })).id;
    runner2Id = (await registerRunner(db(), { name: "move-2", url: runner2.url, token: TOKEN2 })).id;
    ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), lostAfterMs: LOST_AFTER_MS, scanMs: 500, log: () => {} });
    await ingest.start();
    ws = await newWorkspace(db());
  }, 600_000);

  afterAll(async () => {
    await ingest?.stop();
    if (runner1 && runner1.proc.exitCode === null && runner1.proc.signalCode === null) await stopChild(runner1);
    await runner2?.close();
    await tdb?.drop();
    for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
  }, 120_000);

  it("is marked lost, continues on runner 2 from checkpoint 1's bytes, and no step is lost or repeated", async () => {
    const api = callerFor(db(), ws, "move-1");
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    // 2 steps of 2 groups × 2 short rollouts, no evals: the least that trains, checkpoints and moves. The
    // rollout timeout is generous: two engines load and sample on a shared, busy CPU here.
    const files = templateFiles({
      num_steps: 2,
      groups_per_step: 2,
      rollouts_per_group: 2,
      eval_every: 0,
      sampling: { temperature: 1.0, max_tokens: 8 },
      limits: { rollout_timeout_ms: 600_000 },
    });
    const started = await api.runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    runId = started.runId;

    // Mid-step 2: checkpoint 1 recorded, step 2 sampling.
    await until("checkpoint 1 and a step-2 rollout ingested", 480_000, async () => {
      const ck = await db().checkpoint.count({ where: { runId, step: 1 } });
      const s2 = await db().trajectory.count({ where: { runId, step: 2 } });
      return ck === 1 && s2 > 0;
    });
    expect(await db().step.count({ where: { runId, step: 2 } })).toBe(0);
    killedAt = Date.now();
    runner1!.proc.kill("SIGKILL");

    const lost = await until("the run marked lost", 60_000, () => db().run.findFirst({ where: { id: runId, status: "lost" } }));
    const seenLostAt = Date.now();
    expect(lost.runnerId).toBe(runner1Id);
    // Lost since its last sign of life (an event in flight at the kill may still have landed), which the
    // scan found older than RUNNER_LOST_AFTER_MS: not since the moment the scan noticed.
    expect(lost.lostSince!.getTime()).toBeLessThanOrEqual(seenLostAt - LOST_AFTER_MS);
    expect(lost.lostSince!.getTime()).toBeGreaterThanOrEqual(killedAt - 60_000);

    // The user's Resume (no target): runner 1 does not answer, so the configured runner takes it.
    const res = await resumeRun(db(), ws, runId, { byId: (id) => runnerById(db(), id), fallback: () => resolveRunner(db(), "move-2") });
    expect(res).toMatchObject({ ok: true, runnerId: runner2Id, moved: true });
    const moved = await db().run.findUniqueOrThrow({ where: { id: runId } });
    expect(moved).toMatchObject({ runnerId: runner2Id, movedFromRunnerId: runner1Id, lostSince: null });

    const done = await until("the run to end", 480_000, () => db().run.findFirst({ where: { id: runId, status: { in: ["completed", "failed", "stopped"] } } }));
    expect(done.error).toBeNull();
    expect(done.status).toBe("completed");

    // The event log: seq 1..lastSeq, no gap; each step finished once; two attempts, the second from checkpoint 1.
    const rows = await db().runEvent.findMany({ where: { runId }, orderBy: { seq: "asc" } });
    const events = rows.map(rowToEvent);
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: done.lastSeq }, (_, i) => i + 1));
    const stepsFinished = events.flatMap((e) => (e.type === "step.finished" ? [e.payload.step] : []));
    expect(stepsFinished).toEqual([1, 2]);
    const starts = events.filter((e): e is Extract<RunEvent, { type: "run.started" }> => e.type === "run.started");
    expect(starts.map((e) => e.payload.resumed_from_step)).toEqual([0, 1]);
    expect(events.filter((e) => e.type === "checkpoint.saved").map((e) => (e as Extract<RunEvent, { type: "checkpoint.saved" }>).payload.step)).toEqual([1, 2]);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });

    // Steps and rollouts in the tables: each step once, each step's 4 rollouts once (step 2's partial first attempt replaced).
    expect((await db().step.findMany({ where: { runId }, orderBy: { step: "asc" } })).map((s) => s.step)).toEqual([1, 2]);
    for (const step of [1, 2]) {
      const ids = (await db().trajectory.findMany({ where: { runId, step, split: "train" }, select: { id: true } })).map((t) => t.id);
      expect(ids.length).toBe(4);
      expect(new Set(ids).size).toBe(4);
    }
    expect(done.rolloutCount).toBe(8);

    // Checkpoint 1 on runner 2 is the one runner 1 wrote, byte for byte (adapter and optimizer: step 2 trained from it).
    const ck = (dir: string, step: number) => path.join(dir, runId, "checkpoints", String(step).padStart(4, "0"));
    for (const f of CKPT_FILES) {
      expect(sha(path.join(ck(runsDir2, 1), f)), f).toBe(sha(path.join(ck(runsDir1, 1), f)));
      expect(sha(path.join(ck(sharedDir, 1), f)), f).toBe(sha(path.join(ck(runsDir1, 1), f)));
    }
    // Step 2 was trained on runner 2 and published to the share, which names runner 2 the run's only publisher.
    expect(JSON.parse(fs.readFileSync(path.join(sharedDir, runId, "owner.json"), "utf8"))).toMatchObject({ runner: "move-2" });
    expect(fs.existsSync(path.join(ck(runsDir2, 2), "trainer_state.json"))).toBe(true);
    expect(sha(path.join(ck(sharedDir, 2), "adapter_model.safetensors"))).toBe(sha(path.join(ck(runsDir2, 2), "adapter_model.safetensors")));

    // Runner 1's own log, were it to come back and deliver it, is refused whole: the run is runner 2's now.
    const stale = fs.readFileSync(path.join(runsDir1, runId, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as RunEvent);
    const before = await db().runEvent.count({ where: { runId } });
    const refused = await ingestEvents(db(), runId, [...stale, { ...stale.at(-1)!, seq: done.lastSeq + 1, type: "run.finished", payload: { status: "failed", error: "stale", diagnostics: [] } } as RunEvent], runner1Id);
    expect(refused.superseded).toBe(true);
    expect(await db().runEvent.count({ where: { runId } })).toBe(before);
    expect((await db().run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("completed");
  }, 1_200_000);
});
