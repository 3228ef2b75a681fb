/**
 * compare.runs on real Postgres: runs with stored trajectories (through ingestion, as a runner would
 * deliver them) → per-task means and deltas against the baseline, regressions first; the config diff;
 * another workspace's run reads as NOT_FOUND; 1 or 9 runs are refused naming `runIds`.
 *   npx vitest run --project server features/compare/server/compare.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig, RunEvent } from "@contracts";
import { callerAs, callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, trajectory, type TestDb } from "@/server/test/harness";
import { ingestAndEmit } from "@/features/run-lifecycle/server";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

type Rollout = { task: number; reward: number | null; step: number; split?: "train" | "val" };

/** Stores a run's rollouts (and a step.finished per train step) through ingestion; the rest of the log is not needed here. */
async function storeRollouts(runId: string, rollouts: Rollout[], opts: { taskWord?: (task: number) => string } = {}) {
  const word = opts.taskWord ?? ((t: number) => `w${t}`);
  const raw: { type: string; payload: unknown }[] = rollouts.map((r, i) => {
    const base = trajectory(r.task, r.step, r.reward);
    return {
      type: "rollout.finished",
      payload: { ...base, id: `t-${r.split ?? "train"}-${r.step}-${i}`, task_index: r.task, split: r.split ?? "train", task: { word: word(r.task) } },
    };
  });
  for (const step of [...new Set(rollouts.filter((r) => (r.split ?? "train") === "train").map((r) => r.step))]) {
    raw.push({
      type: "step.finished",
      payload: {
        step,
        reward_mean: 0.5,
        reward_std_within_group: 0.1,
        exception_rate: 0,
        groups_trainable: 1,
        rollouts: 2,
        rollout_s: 1,
        train_s: 1,
        step_s: 2,
        tokens_per_s: 10,
        trainer: null,
      },
    });
  }
  const events = raw.map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: 1_700_000_000_000 + i }));
  await ingestAndEmit(db(), runId, events);
}

const train = (step: number, task: number, ...rewards: (number | null)[]): Rollout[] => rewards.map((reward) => ({ task, reward, step }));
const val = (step: number, task: number, ...rewards: (number | null)[]): Rollout[] => rewards.map((reward) => ({ task, reward, step, split: "val" as const }));

describe("compare.runs", () => {
  let ws: string;
  let baseline: string;
  let worse: string;
  let other: string;

  beforeAll(async () => {
    ws = await newWorkspace(db());
    baseline = await createRunningRun(db(), ws);
    worse = await createRunningRun(db(), ws);
    other = await createRunningRun(db(), ws);
    // Step 0 exists to prove only each run's newest step counts: its rewards would flip every delta.
    await storeRollouts(baseline, [
      ...train(0, 0, 0, 0),
      ...train(1, 0, 1, 1), // 1.0
      ...train(1, 1, 0.5, 0.5), // 0.5
      ...train(1, 2, 0, 0), // 0.0
      ...train(1, 4, 1, 1), // only the baseline has task 4
    ]);
    await storeRollouts(worse, [
      ...train(0, 0, 1, 1),
      ...train(1, 0, 0, 0), // −1.0
      ...train(1, 1, 1, 0), //  0.0
      ...train(1, 2, 1, null), // +1.0 over the scored one; one failed rollout
      ...train(1, 3, 1), // not in the baseline
    ]);
    await storeRollouts(other, [
      ...train(2, 0, 0.75, 0.75), // −0.25, newest step is 2
      ...train(2, 1, 0.25, 0.25), // −0.25
      ...train(2, 2, 0.5), // +0.5
    ]);
    await db().run.update({ where: { id: worse }, data: { config: { ...RunConfig.parse({}), seed: 7 } as object } });
  });

  it("gives per-task mean rewards of each run's newest train step and deltas against the baseline, regressions first", async () => {
    const res = await callerFor(db(), ws).compare.runs({ runIds: [baseline, worse, other], baselineRunId: baseline });
    expect(res.runs.map((r) => r.id)).toEqual([baseline, worse, other]);
    expect(res.tasks.split).toBe("train");

    const rows = res.tasks.rows.map((r) => ({
      task: r.taskIndex,
      worst: r.worstDelta,
      means: r.cells.map((c) => c.mean),
      deltas: r.cells.map((c) => c.delta),
    }));
    expect(rows).toEqual([
      { task: 0, worst: -1, means: [1, 0, 0.75], deltas: [null, -1, -0.25] },
      { task: 1, worst: -0.25, means: [0.5, 0.5, 0.25], deltas: [null, 0, -0.25] },
      { task: 2, worst: 0.5, means: [0, 1, 0.5], deltas: [null, 1, 0.5] },
      // No run can be compared with the baseline on these: last, by task index.
      { task: 3, worst: null, means: [null, 1, null], deltas: [null, null, null] },
      { task: 4, worst: null, means: [1, null, null], deltas: [null, null, null] },
    ]);
    const task2 = res.tasks.rows.find((r) => r.taskIndex === 2)!;
    expect(task2.cells[1]).toMatchObject({ rollouts: 2, scored: 1, errors: 1 });
    expect(task2.task).toEqual({ word: "w2" });
    expect(task2.taskDiffers).toBe(false);

    expect(res.tasks.summary).toEqual([
      { runId: baseline, step: 1, tasks: 4, regressions: 0, improvements: 0, unchanged: 0, incomparable: 0 },
      { runId: worse, step: 1, tasks: 4, regressions: 1, improvements: 1, unchanged: 1, incomparable: 2 },
      { runId: other, step: 2, tasks: 3, regressions: 2, improvements: 1, unchanged: 0, incomparable: 2 },
    ]);
    // The charts' data and the exact files come along.
    expect(res.runs[1]!.steps.map((s) => s.step)).toEqual([0, 1]);
    expect(Object.keys(res.runs[0]!.files)).toEqual(expect.arrayContaining(["scenario.ts", "reward.ts", "tasks.jsonl", "config.json"]));
  });

  it("measures against whichever run is the baseline", async () => {
    const res = await callerFor(db(), ws).compare.runs({ runIds: [baseline, worse], baselineRunId: worse });
    const task0 = res.tasks.rows.find((r) => r.taskIndex === 0)!;
    expect(task0.cells.map((c) => c.delta)).toEqual([1, null]);
    // Task 2 is now the regression (baseline's 0 against worse's 1) and comes first.
    expect(res.tasks.rows[0]!.taskIndex).toBe(2);
    expect(res.tasks.rows[0]!.worstDelta).toBe(-1);
  });

  it("uses the validation rollouts of each run's newest eval when every run has them, and flags tasks that differ", async () => {
    const a = await createRunningRun(db(), ws);
    const b = await createRunningRun(db(), ws);
    await storeRollouts(a, [...train(0, 0, 0, 0), ...val(0, 0, 0), ...val(2, 0, 0.5), ...val(2, 1, 1)]);
    await storeRollouts(b, [...train(0, 0, 1, 1), ...val(2, 0, 1), ...val(4, 0, 0.25), ...val(4, 1, 1)], {
      taskWord: (t) => (t === 1 ? "changed" : `w${t}`),
    });
    const res = await callerAs(db(), ws, { role: "viewer" }).then((c) => c.compare.runs({ runIds: [a, b], baselineRunId: a }));
    expect(res.tasks.split).toBe("val");
    expect(res.tasks.summary.map((s) => s.step)).toEqual([2, 4]);
    expect(res.tasks.rows.map((r) => [r.taskIndex, r.cells[1]!.delta, r.taskDiffers])).toEqual([
      [0, -0.25, false],
      [1, 0, true],
    ]);

    // One run without validation rollouts: back to the train split for all.
    const res2 = await callerFor(db(), ws).compare.runs({ runIds: [a, b, baseline], baselineRunId: a });
    expect(res2.tasks.split).toBe("train");
  });

  it("lists the config's key paths with each run's value, marking the ones that differ", async () => {
    const res = await callerFor(db(), ws).compare.runs({ runIds: [baseline, worse, other], baselineRunId: baseline });
    const differing = res.configDiff.filter((r) => !r.same);
    expect(differing).toEqual([{ path: "seed", values: ["42", "7", "42"], same: false }]);
    // The full list is there for "show all": nested keys as dotted paths.
    expect(res.configDiff.length).toBeGreaterThan(5);
    expect(res.configDiff.some((r) => r.path.includes(".") && r.same)).toBe(true);
    expect(res.configDiff.map((r) => r.path)).toEqual([...res.configDiff.map((r) => r.path)].sort());
  });

  it("reads another workspace's run as not found, naming it, and leaks nothing", async () => {
    const otherWs = await newWorkspace(db());
    const foreign = await createRunningRun(db(), otherWs);
    await ingestAndEmit(db(), foreign, runEvents(foreign));
    const err = await callerFor(db(), ws)
      .compare.runs({ runIds: [baseline, foreign], baselineRunId: baseline })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "NOT_FOUND" });
    expect((err as Error).message).toContain(foreign);
    expect((err as Error).message).not.toContain(baseline);
    // A made-up id reads the same.
    await expect(callerFor(db(), ws).compare.runs({ runIds: [baseline, "nope"], baselineRunId: baseline })).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: "run nope not found",
    });
  });

  it("refuses 1 or 9 runs, a duplicate, and a baseline outside the list, naming the field", async () => {
    const caller = callerFor(db(), ws);
    for (const runIds of [[baseline], Array.from({ length: 9 }, (_, i) => `r${i}`)]) {
      const err = await caller.compare.runs({ runIds, baselineRunId: baseline }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "BAD_REQUEST" });
      expect((err as Error).message).toContain("runIds");
    }
    await expect(caller.compare.runs({ runIds: [baseline, baseline], baselineRunId: baseline })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("runIds"),
    });
    await expect(caller.compare.runs({ runIds: [baseline, worse], baselineRunId: other })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: expect.stringContaining("baselineRunId"),
    });
  });
});
