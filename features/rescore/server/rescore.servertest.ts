/**
 * runs.rescore through the tRPC caller, on real Postgres, against the REAL runner server (in this process
 * on a random port; its engine points at a closed port — a plain reward needs none). The run's trajectories
 * are ingested from rollout.finished events as a run writes them (with the scenario's recorded output).
 * Expected advantages are the trainer's own numbers (printed by rollbook_engine.trainer.advantages).
 *   npx vitest run --project server features/rescore/server/rescore.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig, RunEvent, type Trajectory } from "@contracts";
import { registerRunner } from "@/server/runner-client";
import { startEnginelessRunner, type EnginelessRunner } from "@/server/test/engineless-runner";
import { callerAs, callerFor, createRunningRun, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { ingestAndEmit } from "@/features/run-lifecycle/server";

let tdb: TestDb;
let runner: EnginelessRunner;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  runner = await startEnginelessRunner("rescore-servertest");
});
afterAll(async () => {
  await runner?.close();
  await tdb?.drop();
});

/** A say-the-word rollout as the runner records it: the scenario's output is the reply. */
function rollout(
  id: string,
  group: number,
  taskIndex: number,
  word: string,
  output: string | null,
  reward: number | null,
  over: Partial<Trajectory> = {},
): Trajectory {
  return {
    id,
    step: 0,
    group,
    task_index: taskIndex,
    split: "train",
    task: { word },
    messages: [
      { role: "system", content: "Answer with one word." },
      { role: "user", content: `Say the word ${word}.` },
      ...(output === null ? [] : [{ role: "assistant" as const, content: output }]),
    ],
    reward,
    metrics: {},
    error: null,
    model: "SmolLM2-135M-Instruct",
    tokens: { prompt: 20, completion: 3 },
    timings: { started_at: 1_700_000_000_000, duration_ms: 10, model_ms: 5 },
    logs: [],
    output,
    ...over,
  };
}

/**
 * Step 0, two groups of the train split, rewards as the template's reward gave them (1 / words when the
 * word is there), plus a scenario failure, a rollout whose old reward threw, and one validation rollout.
 */
const ROLLOUTS: Trajectory[] = [
  rollout("r:s0:g0:r0", 0, 0, "apple", "apple", 1),
  rollout("r:s0:g0:r1", 0, 0, "apple", "an apple", 0.5),
  rollout("r:s0:g0:r2", 0, 0, "apple", "pear", 0),
  rollout("r:s0:g0:r3", 0, 0, "apple", "apple pie is good", 0.25),
  rollout("r:s0:g1:r0", 1, 1, "river", "river", 1),
  rollout("r:s0:g1:r1", 1, 1, "river", "River.", 1),
  rollout("r:s0:g1:r2", 1, 1, "river", "a river", 0.5),
  rollout("r:s0:g1:r3", 1, 1, "river", "the river", 0.5),
  rollout("r:s0:g1:r4", 1, 1, "river", null, null, { error: { kind: "thrown", message: "scenario blew up" }, output: null }),
  rollout("r:s0:g1:r5", 1, 1, "river", "river", null, { error: { kind: "reward", message: "the reward function threw: old bug" } }),
  rollout("r:eval0:g0:r0", 0, 0, "apple", "Apple.", 1, { split: "val" }),
];

async function seedRun(ws: string): Promise<string> {
  const runId = await createRunningRun(db(), ws);
  const events = [
    { type: "run.started", payload: { kind: "train", config: RunConfig.parse({}), model: "SmolLM2-135M-Instruct", resumed_from_step: 0 } },
    ...ROLLOUTS.map((t) => ({ type: "rollout.finished", payload: t })),
    { type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } },
  ].map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: 1_700_000_000_000 + i }));
  await ingestAndEmit(db(), runId, events);
  return runId;
}

async function setup() {
  const ws = await newWorkspace(db());
  const name = `rescore-${ws}`;
  await registerRunner(db(), { name, url: runner.url, token: runner.token });
  return { ws, name, api: callerFor(db(), ws, name), runId: await seedRun(ws) };
}

/** The template's reward, made binary: 1 when the word is in the reply at all. */
const BINARY = `import type { RewardInput, RewardResult } from "rollbook";
import type { Task } from "./scenario";

export default function reward({ task, output }: RewardInput<Task, string>): RewardResult {
  const words = output.toLowerCase().split(/[^\\p{L}\\p{N}]+/u).filter(Boolean);
  return { reward: words.includes(task.word) ? 1 : 0, metrics: { words: words.length } };
}
`;

const rowsById = <T extends { id: string }>(rows: T[]) => Object.fromEntries(rows.map((r) => [r.id, r]));

describe("runs.rescore", () => {
  it("an edited reward: old vs new rewards and advantages per trajectory, per task and overall; nothing is written", async () => {
    const { api, runId } = await setup();
    const before = await db().trajectory.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { id: true, reward: true, error: true } });
    const eventsBefore = await db().runEvent.count({ where: { runId } });

    const res = await api.runs.rescore({ runId, files: { "reward.ts": BINARY } });
    if (!res.ok) throw new Error(res.error);
    expect(res).toMatchObject({ available: 11, loaded: 11, capped: false, limit: 2000, outputsMissing: 0, groupReward: false, scaleRewards: { old: true, new: true } });
    const rows = rowsById(res.rows);

    // Group 0: [1, 0.5, 0, 0.25] → [1, 1, 0, 1]; "apple pie is good" goes from below the mean to above it.
    expect(rows["r:s0:g0:r0"]).toMatchObject({ oldReward: 1, newReward: 1, changed: false, oldAdvantage: 1.5212735442367427, newAdvantage: 0.5773489358593717 });
    expect(rows["r:s0:g0:r1"]).toMatchObject({ oldReward: 0.5, newReward: 1, changed: true, oldAdvantage: 0.16903039380408252, newAdvantage: 0.5773489358593717, signFlip: false });
    expect(rows["r:s0:g0:r2"]).toMatchObject({ oldReward: 0, newReward: 0, changed: false, oldAdvantage: -1.1832127566285777, newAdvantage: -1.732046807578115 });
    expect(rows["r:s0:g0:r3"]).toMatchObject({ oldReward: 0.25, newReward: 1, changed: true, oldAdvantage: -0.5070911814122475, newAdvantage: 0.5773489358593717, signFlip: true });
    expect(rows["r:s0:g0:r3"]!.newMetrics).toEqual({ words: 4 });

    // Group 1: [1, 1, 0.5, 0.5] trained; every reply now scores 1, so the group teaches nothing.
    expect(rows["r:s0:g1:r0"]).toMatchObject({ oldAdvantage: 0.9999960000160001, newAdvantage: null });
    expect(rows["r:s0:g1:r2"]).toMatchObject({ oldReward: 0.5, newReward: 1, oldAdvantage: -0.9999960000160001, newAdvantage: null });
    // The scenario failure is not re-scored; the rollout whose old reward threw now scores.
    expect(rows["r:s0:g1:r4"]).toMatchObject({ status: "skipped", newReward: null, skippedReason: expect.stringContaining("scenario failed (thrown)") });
    expect(rows["r:s0:g1:r5"]).toMatchObject({ status: "rescored", oldReward: null, newReward: 1, newError: null, changed: true, oldAdvantage: null, newAdvantage: null });
    // Validation rollouts are re-scored but never trained.
    expect(rows["r:eval0:g0:r0"]).toMatchObject({ split: "val", oldReward: 1, newReward: 1, oldAdvantage: null, newAdvantage: null });

    const apple = res.tasks.find((t) => t.split === "train" && t.taskIndex === 0)!;
    expect(apple).toMatchObject({ trajectories: 4, oldMean: 0.4375, newMean: 0.75, changed: 2, signFlips: 1, groups: 1, groupsBecameUntrainable: 0 });
    const river = res.tasks.find((t) => t.split === "train" && t.taskIndex === 1)!;
    expect(river).toMatchObject({ trajectories: 6, oldMean: 0.75, newMean: 1, changed: 3, fixedErrors: 1, groups: 1, groupsBecameUntrainable: 1 });
    // Biggest change first.
    expect(res.tasks[0]).toMatchObject({ split: "train", taskIndex: 0 });
    expect(res.overall).toMatchObject({ trajectories: 11, rescored: 10, changed: 5, signFlips: 1, newErrors: 0, fixedErrors: 1, groups: 2, groupsBecameUntrainable: 1, groupsBecameTrainable: 0 });
    expect(res.overall.oldMean).toBeCloseTo(5.75 / 9, 12);
    expect(res.overall.newMean).toBeCloseTo(9 / 10, 12);

    // A what-if: the stored run is untouched.
    expect(await db().trajectory.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { id: true, reward: true, error: true } })).toEqual(before);
    expect(await db().runEvent.count({ where: { runId } })).toBe(eventsBefore);
  });

  it("a reward that throws on one trajectory: that one errors at its line, the group is re-normalised without it", async () => {
    const { api, runId } = await setup();
    const original = templateFiles()["reward.ts"];
    const throwing = original.replace("  const words =", '  if (output === "pear") throw new Error("pears are not words");\n  const words =');
    const line = throwing.split("\n").findIndex((l) => l.includes("pears are not words")) + 1;
    const res = await api.runs.rescore({ runId, files: { "reward.ts": throwing }, split: "train", step: 0 });
    if (!res.ok) throw new Error(res.error);
    expect(res.loaded).toBe(10);
    const rows = rowsById(res.rows);
    expect(rows["r:s0:g0:r2"]!.newReward).toBeNull();
    expect(rows["r:s0:g0:r2"]!.newError).toMatchObject({ kind: "reward", message: "the reward function threw: pears are not words" });
    expect(rows["r:s0:g0:r2"]!.newError!.stack).toContain(`reward.ts:${line}:`);
    // The trainer's numbers for [1, 0.5, 0.25].
    expect([rows["r:s0:g0:r0"]!.newAdvantage, rows["r:s0:g0:r1"]!.newAdvantage, rows["r:s0:g0:r3"]!.newAdvantage]).toEqual([
      1.3363019238615812, -0.2672603847723164, -1.0690415390892651,
    ]);
    // Group 1: the rollout whose old reward threw now scores 1 and joins its group: [1, 1, 0.5, 0.5, 1].
    expect(rows["r:s0:g1:r0"]).toMatchObject({ newReward: 1, changed: false, oldAdvantage: 0.9999960000160001, newAdvantage: 0.8164932476080008 });
    expect(rows["r:s0:g1:r5"]).toMatchObject({ oldReward: null, newReward: 1, oldAdvantage: null, newAdvantage: 0.8164932476080008 });
    expect(res.overall.newErrors).toBe(1);
  });

  it("a syntax error comes back as diagnostics at its line, like validate", async () => {
    const { api, runId } = await setup();
    const res = await api.runs.rescore({ runId, files: { "reward.ts": "export default function reward() {\n  return (1 +;\n}\n" } });
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.diagnostics[0]).toMatchObject({ file: "reward.ts", line: 2 });
  });

  it("refuses a path that is no experiment file, by name", async () => {
    const { api, runId } = await setup();
    await expect(api.runs.rescore({ runId, files: { "reward.ts": BINARY, "../etc/passwd": "x" } })).rejects.toThrow(/files: "\.\.\/etc\/passwd" is not an experiment file/);
  });

  it("a viewer may not re-score (FORBIDDEN); another workspace's run reads as NOT_FOUND", async () => {
    const { ws, name, runId } = await setup();
    const viewer = await callerAs(db(), ws, { role: "viewer", runnerName: name });
    await expect(viewer.runs.rescore({ runId, files: { "reward.ts": BINARY } })).rejects.toMatchObject({ code: "FORBIDDEN" });
    const other = await newWorkspace(db());
    await expect(callerFor(db(), other, name).runs.rescore({ runId, files: { "reward.ts": BINARY } })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});
