/**
 * validation_fell through real ingestion on real Postgres: a run whose checkpoint evals go 0.75 → 0.25 → 0
 * (the multi-turn game of issue 31) is flagged, and the eval after the LAST step (which arrives after that
 * step's step.finished) extends the flag by itself; a plateau (0.875, 0.875, 0.85) raises nothing. The flag
 * reads the evals of the checkpoints the run still has, as `<run>@best` does.
 *   npx vitest run --project server features/flags/server/detect/validation-fell.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig, RunEvent } from "@contracts";
import { ingestAndEmit } from "@/features/run-lifecycle/server";
import { postIngestSettled } from "./after-ingest";
import { createRunningRun, createTestDb, newWorkspace, trajectory, type TestDb } from "@/server/test/harness";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
}, 120_000);
afterAll(async () => {
  await tdb?.drop();
});

/** run.started, then per step: 4 rollouts, checkpoint.saved, step.finished, eval.finished of that checkpoint. */
function events(runId: string, evalRewards: number[]): RunEvent[] {
  const evs: { type: RunEvent["type"]; payload: unknown }[] = [
    { type: "run.started", payload: { kind: "train", config: RunConfig.parse({ eval_every: 1 }), model: "SmolLM2-135M-Instruct", resumed_from_step: 0 } },
  ];
  evalRewards.forEach((reward, i) => {
    const step = i + 1;
    for (let k = 0; k < 4; k++) evs.push({ type: "rollout.finished", payload: { ...trajectory(k, step, k % 2), id: `${runId}-${step}-${k}` } });
    evs.push({ type: "checkpoint.saved", payload: { step, path: `runs/${runId}/checkpoints/${String(step).padStart(4, "0")}`, size_bytes: 1234 } });
    evs.push({
      type: "step.finished",
      payload: { step, reward_mean: 0.5, reward_std_within_group: 0.5, exception_rate: 0, groups_trainable: 2, rollouts: 4, rollout_s: 1, train_s: 1, step_s: 2, tokens_per_s: 10, trainer: null },
    });
    evs.push({ type: "eval.finished", payload: { step, model: `${runId}@${step}`, reward_mean: reward, reward_std: 0.1, exception_rate: 0, rollouts: 8 } });
  });
  return evs.map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: 1_700_000_000_000 + i }));
}

async function ingest(runId: string, evs: RunEvent[]) {
  await ingestAndEmit(db(), runId, evs);
  await postIngestSettled(runId);
}

describe("validation_fell on ingested runs", () => {
  it("flags a fall from the best, and the final eval alone extends it", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const number = (await db().run.findUniqueOrThrow({ where: { id: runId }, select: { number: true } })).number;
    const evs = events(runId, [0.75, 0.25, 0]);
    await ingest(runId, evs.slice(0, -1)); // everything but the last eval
    let [flag, ...rest] = await db().runFlag.findMany({ where: { runId, rule: "validation_fell" } });
    expect(rest).toEqual([]);
    expect(flag).toMatchObject({ severity: "warning", firstStep: 2, lastStep: 2, steps: [2] });
    await ingest(runId, evs.slice(-1)); // the eval after the last step, in a batch of its own
    [flag, ...rest] = await db().runFlag.findMany({ where: { runId, rule: "validation_fell" } });
    expect(rest).toEqual([]);
    expect(flag).toMatchObject({ firstStep: 2, lastStep: 3, steps: [2, 3] });
    expect(flag!.message).toContain("0.750 at step 1");
    expect(flag!.message).toContain(`"${number}@best"`);
    const alert = await db().alert.findFirst({ where: { runId, kind: "run.flag" } });
    expect(alert?.title).toBe(`Run #${number}: validation fell from its best`);
  });

  it("raises nothing on a plateau or a rise", async () => {
    const ws = await newWorkspace(db());
    for (const rewards of [[0.875, 0.875, 0.85], [0.27, 0.5, 0.88]]) {
      const runId = await createRunningRun(db(), ws);
      await ingest(runId, events(runId, rewards));
      expect(await db().runFlag.count({ where: { runId, rule: "validation_fell" } }), rewards.join(",")).toBe(0);
    }
  });
});
