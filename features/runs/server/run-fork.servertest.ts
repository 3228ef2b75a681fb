/**
 * Fork and re-run through the web API with a REAL runner and engine (SmolLM2-135M on CPU) and real ingestion:
 * a 1-step train run of templates/say-the-word, forked at its checkpoint into a new 1-step run whose adapter
 * must start from the parent's, then an eval of that checkpoint, the lineage on both runs, and refusals.
 *   npx vitest run --project server features/runs/server/run-fork.servertest.ts
 * Needs the engine's venv (npm run setup).
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner, runnerById } from "@/server/runner-client";
import { callerAs, callerFor, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { IngestService } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";

const TOKEN = "fork-servertest-token-0123";
const env0 = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
const engineAvailable = fs.existsSync(env0.ENGINE_PYTHON);
if (!engineAvailable) console.warn(`run-fork.servertest: skipped, no engine python at ${env0.ENGINE_PYTHON} (npm run setup)`);

let tdb: TestDb;
let runner: TestRunner | undefined;
let ingest: IngestService;
const RUNNER_NAME = "fork-servertest";
const db = () => tdb.handle.prisma;

/** One step, one group of 4, 8 tokens, no evals: the smallest run that trains and saves checkpoint 1. */
const TINY = { num_steps: 1, groups_per_step: 1, rollouts_per_group: 4, max_concurrency: 4, eval_every: 0, sampling: { temperature: 1, max_tokens: 8 } };

/** safetensors: 8-byte little-endian header length, a JSON header of name → {dtype, shape, data_offsets}, then the data. */
function readTensors(file: string): Map<string, Buffer> {
  const buf = fs.readFileSync(file);
  const headerLen = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString("utf8")) as Record<string, { data_offsets?: [number, number] }>;
  const data = buf.subarray(8 + headerLen);
  const out = new Map<string, Buffer>();
  for (const [name, t] of Object.entries(header)) if (t.data_offsets) out.set(name, data.subarray(t.data_offsets[0], t.data_offsets[1]));
  return out;
}

async function waitFinished(runId: string, timeoutMs = 300_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, error: true } });
    if (["completed", "failed", "stopped"].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.skipIf(!engineAvailable)("fork and re-run (real runner, engine and ingestion)", () => {
  beforeAll(async () => {
    tdb = await createTestDb();
    runner = await startTestRunner({ name: RUNNER_NAME, token: TOKEN, engine: "shared" });
    await registerRunner(db(), { name: RUNNER_NAME, url: runner.server.url, token: TOKEN });
    ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 60_000, log: () => {} });
    await ingest.start();
  }, 600_000);

  afterAll(async () => {
    await ingest?.stop();
    await runner?.close();
    await tdb?.drop();
  }, 60_000);

  it("forks a checkpoint into a new run that starts from its adapter; both runs show the lineage", { timeout: 900_000 }, async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws, RUNNER_NAME);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);

    // The parent: one real training step → checkpoint 1.
    const parentFiles = templateFiles({ ...TINY, seed: 1 });
    const started = await api.runs.start({ experimentId, files: parentFiles, kind: "train" });
    if (!started.ok) throw new Error(`parent refused: ${started.error}`);
    const parentId = started.runId;
    expect(await waitFinished(parentId)).toEqual({ status: "completed", error: null });
    const parentCkpt = await db().checkpoint.findUniqueOrThrow({ where: { runId_step: { runId: parentId, step: 1 } } });

    // Someone edits the experiment meanwhile; forking opens the parent's exact files as the newest version.
    await api.experiments.save({ id: experimentId, files: { ...parentFiles, "reward.ts": "export default function reward() { return 1; }\n" } });
    const opened = await api.runs.fork({ runId: parentId, step: 1 });
    const parentRow = await db().run.findUniqueOrThrow({ where: { id: parentId }, select: { number: true, version: { select: { number: true } } } });
    expect(opened).toMatchObject({ experimentId, files: parentFiles, parent: { runId: parentId, number: parentRow.number, step: 1, kind: "train" } });
    expect(opened.versionNumber).toBeGreaterThan(parentRow.version.number);
    const head = await api.experiments.get({ id: experimentId });
    expect([head.version.number, head.version.files]).toEqual([opened.versionNumber, parentFiles]);
    expect(await db().experimentVersion.findFirstOrThrow({ where: { experimentId, number: opened.versionNumber }, select: { restoredFrom: true } })).toEqual({
      restoredFrom: parentRow.version.number,
    });

    // Edit and start. A constant reward gives no group any variance, so the fork's one step makes no update and
    // its checkpoint 1 is exactly where its adapter started; another seed means a fresh LoRA would differ.
    const forkFiles = { ...opened.files, "reward.ts": "export default function reward() { return 0; }\n", "config.json": JSON.stringify({ ...JSON.parse(opened.files["config.json"]), seed: 2 }) };
    const forked = await api.runs.start({ experimentId, files: forkFiles, kind: "train", fork: { parentRunId: parentId, parentStep: 1 } });
    if (!forked.ok) throw new Error(`fork refused: ${forked.error}`);
    expect(await waitFinished(forked.runId)).toEqual({ status: "completed", error: null });

    const child = await db().run.findUniqueOrThrow({ where: { id: forked.runId }, select: { parentRunId: true, parentStep: true, number: true } });
    expect(child).toMatchObject({ parentRunId: parentId, parentStep: 1 });
    const runStarted = await db().runEvent.findFirstOrThrow({ where: { runId: forked.runId, type: "run.started" } });
    expect(runStarted.payload).toMatchObject({ init_from: { run_id: parentId, step: 1, load_optimizer: false } });
    // Its first step sampled from the parent's checkpoint, not the base model.
    const models = await db().trajectory.findMany({ where: { runId: forked.runId, step: 1, split: "train" }, select: { model: true } });
    expect(models.length).toBe(4);
    expect(new Set(models.map((m) => m.model))).toEqual(new Set([`${parentId}@1`]));
    // And its adapter started from the parent's: the fork's checkpoint 1 holds the parent's tensors, byte for byte.
    const childCkpt = await db().checkpoint.findUniqueOrThrow({ where: { runId_step: { runId: forked.runId, step: 1 } } });
    const step1 = await db().step.findUniqueOrThrow({ where: { runId_step: { runId: forked.runId, step: 1 } } });
    expect((step1.metrics as { trainer: { skipped: boolean } }).trainer.skipped).toBe(true);
    const mine = readTensors(path.join(childCkpt.path, "adapter_model.safetensors"));
    const theirs = readTensors(path.join(parentCkpt.path, "adapter_model.safetensors"));
    expect([...mine.keys()].sort()).toEqual([...theirs.keys()].sort());
    expect(mine.size).toBeGreaterThan(0);
    for (const [name, bytes] of theirs) expect(mine.get(name)?.equals(bytes), name).toBe(true);

    // An eval fork evaluates that checkpoint.
    const evalRun = await api.runs.start({ experimentId, files: parentFiles, kind: "eval", fork: { parentRunId: parentId, parentStep: 1 } });
    if (!evalRun.ok) throw new Error(`eval fork refused: ${evalRun.error}`);
    expect(await db().run.findUniqueOrThrow({ where: { id: evalRun.runId }, select: { evalModel: true, parentRunId: true, parentStep: true } })).toEqual({
      evalModel: `${parentId}@1`,
      parentRunId: parentId,
      parentStep: 1,
    });
    expect((await waitFinished(evalRun.runId)).status).toBe("completed");
    const evalModels = await db().trajectory.findMany({ where: { runId: evalRun.runId }, select: { model: true }, distinct: ["model"] });
    expect(evalModels).toEqual([{ model: `${parentId}@1` }]);

    // Both runs show the lineage.
    const down = await api.runs.lineage({ id: parentId });
    expect(down.parent).toBeNull();
    expect(down.forks.map((f) => [f.id, f.step, f.kind]).sort()).toEqual(
      [
        [forked.runId, 1, "train"],
        [evalRun.runId, 1, "eval"],
      ].sort(),
    );
    expect((await api.runs.lineage({ id: forked.runId })).parent).toEqual({ id: parentId, number: parentRow.number, kind: "train", step: 1 });

    // A checkpoint the runner no longer has (cleaned up): the start is queued (the files are fine), and the
    // runner refuses it when it is dispatched — the run is failed with the runner's reason, never left queued.
    fs.rmSync(parentCkpt.path, { recursive: true, force: true });
    const gone = await api.runs.start({ experimentId, files: forkFiles, kind: "train", fork: { parentRunId: parentId, parentStep: 1 } });
    if (!gone.ok || !gone.runId) throw new Error(`expected the fork to be queued: ${JSON.stringify(gone)}`);
    const goneId = gone.runId;
    const deadline = Date.now() + 60_000;
    let row = await db().run.findUniqueOrThrow({ where: { id: goneId }, select: { status: true, error: true, startedAt: true } });
    while (row.status === "queued" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      row = await db().run.findUniqueOrThrow({ where: { id: goneId }, select: { status: true, error: true, startedAt: true } });
    }
    expect(row.status).toBe("failed");
    expect(row.error).toMatch(/init_from\.step: run \S+ has no checkpoint at step 1 on this runner/);
    expect(row.startedAt).toBeNull();
  });

  it("refuses what cannot be forked: another workspace's run, a missing step, a viewer, another base model", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws, RUNNER_NAME);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    // A finished train run with checkpoint 1, written directly (no engine needed for refusals).
    const exp = await db().experiment.findUniqueOrThrow({ where: { id: experimentId }, select: { versions: { select: { id: true } } } });
    const runner = await db().runner.findFirstOrThrow({ where: { name: RUNNER_NAME } });
    const parent = await db().run.create({
      data: {
        number: 1, workspaceId: ws, experimentId, versionId: exp.versions[0]!.id, runnerId: runner.id, kind: "train", status: "completed",
        config: RunConfig.parse(JSON.parse(templateFiles()["config.json"])) as object,
        baseModel: "SmolLM2-135M-Instruct", seed: 42, codeHash: "c", tasksHash: "t",
        checkpoints: { create: { step: 1, path: "/nowhere/0001", sizeBytes: 1 } },
      },
    });

    // Another workspace's run reads as not found, for opening and for starting.
    const otherWs = await newWorkspace(db());
    const other = callerFor(db(), otherWs, RUNNER_NAME);
    const { id: otherExp } = await ensureDefaultExperiment(db(), otherWs);
    await expect(other.runs.fork({ runId: parent.id, step: 1 })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(other.runs.start({ experimentId: otherExp, files: templateFiles(), kind: "train", fork: { parentRunId: parent.id, parentStep: 1 } })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await expect(other.runs.lineage({ id: parent.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await db().run.count({ where: { workspaceId: otherWs } })).toBe(0);

    // A step with no checkpoint: BAD_REQUEST naming the step.
    const missing = await api.runs.fork({ runId: parent.id, step: 5 }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: "BAD_REQUEST", message: expect.stringMatching(/^step: run #1 has no checkpoint at step 5 \(its checkpoints: 1\)/) });
    const missingStart = await api.runs.start({ experimentId, files: templateFiles(), kind: "train", fork: { parentRunId: parent.id, parentStep: 5 } }).catch((e: unknown) => e);
    expect(missingStart).toMatchObject({ code: "BAD_REQUEST", message: expect.stringContaining("fork.parentStep: run #1 has no checkpoint at step 5") });

    // A viewer reads the lineage but cannot fork.
    const viewer = await callerAs(db(), ws, { role: "viewer", runnerName: RUNNER_NAME });
    await expect(viewer.runs.fork({ runId: parent.id, step: 1 })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(viewer.runs.start({ experimentId, files: templateFiles(), kind: "train", fork: { parentRunId: parent.id, parentStep: 1 } })).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await viewer.runs.lineage({ id: parent.id })).toEqual({
      run: { id: parent.id, number: 1, kind: "train", experimentId, checkpointSteps: [1] },
      parent: null,
      forks: [],
    });

    // Another base model, or another LoRA shape: diagnostics at their config.json lines, and no run row.
    const config = JSON.parse(templateFiles()["config.json"]) as Record<string, unknown>;
    const otherModel = JSON.stringify({ ...config, model: "Qwen/Qwen2.5-0.5B-Instruct" }, null, 2);
    const res = await api.runs.start({ experimentId, files: { ...templateFiles(), "config.json": otherModel }, kind: "train", fork: { parentRunId: parent.id, parentStep: 1 } });
    expect(res).toMatchObject({ ok: false, diagnostics: [{ file: "config.json", line: 2, message: expect.stringContaining("was trained on SmolLM2-135M-Instruct") }] });
    const rank = JSON.stringify({ ...config, trainer: { lora_rank: 4 } }, null, 2);
    const res2 = await api.runs.start({ experimentId, files: { ...templateFiles(), "config.json": rank }, kind: "train", fork: { parentRunId: parent.id, parentStep: 1 } });
    expect(res2).toMatchObject({ ok: false, diagnostics: [{ file: "config.json", message: expect.stringMatching(/^trainer\.lora_rank: run #1 @ step 1 has rank 8/) }] });
    // A dry run cannot start from a checkpoint; optimizer state only comes with a train fork of a checkpoint.
    await expect(api.runs.start({ experimentId, files: templateFiles(), kind: "dry-run", fork: { parentRunId: parent.id, parentStep: 1 } })).rejects.toMatchObject({ code: "BAD_REQUEST" });
    await expect(api.runs.start({ experimentId, files: templateFiles(), kind: "train", fork: { parentRunId: parent.id, loadOptimizer: true } })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("fork.loadOptimizer"),
    });
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(1);
  });
});
