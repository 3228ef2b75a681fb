/**
 * The web API against a real Postgres (a fresh, migrated database for this file), through createCaller.
 *   npx vitest run --project server server/api.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { servedEvent, type RunEvent } from "@contracts";
import { closedPort, callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, templateFiles, type TestDb } from "./test/harness";
import { registerRunner } from "./runner-client";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { ingestEvents } from "@/features/run-lifecycle/server";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

describe("experiments", () => {
  it("save creates immutable versions and dedupes identical files", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const { id } = await ensureDefaultExperiment(db(), ws);
    expect(await api.experiments.default()).toEqual({ id });

    const v1 = await api.experiments.get({ id });
    expect(v1.version.number).toBe(1);
    expect(v1.version.files).toEqual(templateFiles());

    const same = await api.experiments.save({ id, files: templateFiles() });
    expect(same).toEqual({ versionId: v1.version.id, number: 1, created: false });

    const edited = { ...templateFiles(), "reward.ts": v1.version.files["reward.ts"] + "\n// tweak\n" };
    const v2 = await api.experiments.save({ id, files: edited });
    expect(v2).toMatchObject({ number: 2, created: true });
    expect(await api.experiments.save({ id, files: edited })).toEqual({ ...v2, created: false });

    // Back to the original text: a new version (history stays linear), and v1 is untouched.
    const v3 = await api.experiments.save({ id, files: templateFiles() });
    expect(v3).toMatchObject({ number: 3, created: true });
    expect((await api.experiments.get({ id, versionNumber: 1 })).version.files).toEqual(templateFiles());
    expect((await api.experiments.get({ id })).version.number).toBe(3);

    const list = await api.experiments.list();
    expect(list).toEqual([expect.objectContaining({ id, name: "say-the-word", latestVersionNumber: 3, runCount: 0 })]);
  });

  it("unknown ids are NOT_FOUND with the app code, no stack", async () => {
    const api = callerFor(db(), await newWorkspace(db()));
    const err = await api.experiments.get({ id: "nope" }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "NOT_FOUND", message: "experiment nope not found" });
  });
});

describe("runs.start", () => {
  it("with the runner unreachable, the run row is failed with the reason and nothing is left queued/running", async () => {
    const ws = await newWorkspace(db());
    const port = await closedPort();
    const name = `closed-${ws}`;
    await registerRunner(db(), { name, url: `http://127.0.0.1:${port}`, token: "test-token-123456" });
    const api = callerFor(db(), ws, name);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);

    const res = await api.runs.start({ experimentId, files: templateFiles(), kind: "dry-run" });
    expect(res.ok).toBe(false);
    if (res.ok) throw new Error("unreachable");
    // Named, with the cause, but not where it is: a member reads this, and the runner's address is its operator's.
    expect(res.error).toMatch(new RegExp(`runner '${name}' unreachable: .*ECONNREFUSED <address>`));
    expect(res.error).not.toContain(String(port));
    expect(res.runId).toBeTruthy();

    const runs = await db().run.findMany({ where: { workspaceId: ws } });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ id: res.runId, status: "failed", number: 1, kind: "dry_run" });
    expect(runs[0]!.error).toContain("unreachable");
    expect(runs[0]!.finishedAt).toBeInstanceOf(Date);

    const listed = await api.runs.list({});
    expect(listed.items).toEqual([expect.objectContaining({ id: res.runId, status: "failed", kind: "dry-run", experimentName: "say-the-word" })]);
    const detail = await api.runs.get({ id: res.runId! });
    expect(detail.config.seed).toBe(42);
    expect(detail.config.trainer.lora_rank).toBe(8); // defaults applied and frozen
    expect(detail.version.number).toBe(1);
  });

  it("a broken config.json is refused with positioned diagnostics and creates no run", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws, `closed-${ws}`);
    await registerRunner(db(), { name: `closed-${ws}`, url: `http://127.0.0.1:${await closedPort()}`, token: "test-token-123456" });
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const files = { ...templateFiles(), "config.json": '{\n  "num_steps": 0,\n  "bogus": 1\n}' };
    const res = await api.runs.start({ experimentId, files, kind: "train" });
    expect(res.ok).toBe(false);
    if (res.ok) throw new Error("unreachable");
    expect(res.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: "config.json", line: 2, message: expect.stringContaining("num_steps") }),
        expect.objectContaining({ file: "config.json", line: 3, message: "bogus: unknown field" }),
      ]),
    );
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(0);
  });
});

describe("ingestion", () => {
  it("storing the same event batch twice gives one set of rows and the same counters", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const runId = await createRunningRun(db(), ws);
    const events = runEvents(runId);

    const first = await ingestEvents(db(), runId, events);
    expect(first.fresh).toHaveLength(events.length);
    expect(first.status).toBe("completed");
    const snapshot = async () => ({
      run: await db().run.findUniqueOrThrow({ where: { id: runId } }),
      events: await db().runEvent.count({ where: { runId } }),
      trajectories: await db().trajectory.count({ where: { runId } }),
      steps: await db().step.count({ where: { runId } }),
      checkpoints: await db().checkpoint.count({ where: { runId } }),
    });
    const after1 = await snapshot();

    const second = await ingestEvents(db(), runId, events);
    expect(second.fresh).toHaveLength(0);
    // And a partial, reordered re-delivery of the middle of the log.
    await ingestEvents(db(), runId, events.slice(3, 9).reverse());
    const after2 = await snapshot();
    expect({ ...after2, run: { ...after2.run, lastHeartbeatAt: null } }).toEqual({ ...after1, run: { ...after1.run, lastHeartbeatAt: null } });

    expect(after1).toMatchObject({ events: events.length, trajectories: 8, steps: 2, checkpoints: 2 });
    expect(after1.run).toMatchObject({ status: "completed", lastSeq: events.length, rolloutCount: 8, errorCount: 1, currentStep: 1 });
    expect(after1.run.rewardCount).toBe(7);
    expect(after1.run.rewardSum).toBe(3); // rewards i % 2 for 8 rollouts, one of them failed (null)

    const detail = await api.runs.get({ id: runId });
    expect(detail.steps.map((s) => s.step)).toEqual([0, 1]);
    expect(detail.evals).toEqual([expect.objectContaining({ step: 2, reward_mean: 0.75 })]);
    expect(detail.checkpoints).toEqual([expect.objectContaining({ step: 0, sizeBytes: 1234 }), expect.objectContaining({ step: 1 })]);
    expect(detail.rewardMean).toBeCloseTo(3 / 7);

    const trajs = await api.runs.trajectories({ runId, step: 0, limit: 3 });
    expect(trajs.items.map((t) => t.task_index)).toEqual([0, 1, 2]);
    const rest = await api.runs.trajectories({ runId, step: 0, limit: 3, cursor: trajs.nextCursor });
    expect(rest.items.map((t) => t.task_index)).toEqual([3]);
    expect(rest.items[0]!.error).toEqual({ kind: "thrown", message: "boom" });
    expect(rest.nextCursor).toBeNull();
  });

  it("NUL characters and unpaired surrogates are stored as U+FFFD instead of failing the batch", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const runId = await createRunningRun(db(), ws);
    const [started, rollout] = runEvents(runId) as [RunEvent, Extract<RunEvent, { type: "rollout.finished" }>];
    const bad = { ...rollout, payload: { ...rollout.payload, logs: ["nul\0here", "half \ud83d pair", "ok \ud83d\ude00"] } };
    await ingestEvents(db(), runId, [started, bad]);
    const [t] = (await api.runs.trajectories({ runId })).items;
    expect(t!.logs).toEqual(["nul\uFFFDhere", "half \uFFFD pair", "ok \ud83d\ude00"]);
  });

  it("events after seq N come back in order with no gap, across batches", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const runId = await createRunningRun(db(), ws);
    const events = runEvents(runId);
    // Delivered in three uneven batches, the middle one out of order.
    await ingestEvents(db(), runId, events.slice(0, 5));
    await ingestEvents(db(), runId, events.slice(5, 12).reverse());
    await ingestEvents(db(), runId, events.slice(12));

    const after4 = await api.runs.events({ runId, afterSeq: 4, limit: 500 });
    expect(after4.map((e) => e.seq)).toEqual(events.slice(4).map((e) => e.seq));
    // As served: a checkpoint without its path on the runner's disk (contracts/run.ts, ServedRunEvent).
    expect(after4).toEqual(events.slice(4).map(servedEvent));

    // Paging: each page resumes exactly after the last seq seen.
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = await api.runs.events({ runId, afterSeq: after, limit: 4 });
      if (page.length === 0) break;
      seen.push(...page.map((e) => e.seq));
      after = page.at(-1)!.seq;
    }
    expect(seen).toEqual(events.map((e) => e.seq));
  });
});
