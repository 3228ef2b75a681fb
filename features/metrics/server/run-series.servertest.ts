/**
 * runs.series on a run stored the real way (its events through ingestEvents into Step / Trajectory /
 * RunEvent rows in Postgres): the reward bands, the metrics keys' means, the step time split, the three x
 * modes, M4 bucketing of a long run, and access.
 *
 *   npx vitest run --project server features/metrics/server/run-series.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEvent, type StepMetrics, type Trajectory } from "@contracts";
import { callerAs, callerFor, createRunningRun, createTestDb, newWorkspace, trajectory, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";

let t: TestDb;
const db = () => t.handle.prisma;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(async () => t?.drop());

function stepMetrics(step: number, over: Partial<StepMetrics> = {}): StepMetrics {
  return {
    step,
    reward_mean: 0.5,
    reward_std_within_group: 0.2,
    exception_rate: 0,
    groups_trainable: 2,
    rollouts: 4,
    rollout_s: 3,
    train_s: 2,
    step_s: 5.5,
    tokens_per_s: 40,
    judge_tokens: 0,
    judge_cost_usd: 0,
    trainer: {
      loss: 0.1 * step,
      grad_norm: 1,
      kl: 0.01 * step,
      clip_fraction: 0,
      entropy: 2,
      probs_corr: 0.99,
      trained_tokens: 100,
      groups_submitted: 2,
      groups_trainable: 2,
      skipped: false,
      duration_s: 1.9,
      checkpoint_s: 0.5,
    },
    ...over,
  };
}

function rollout(i: number, step: number, reward: number | null, metrics: Record<string, number>, completion: number): Trajectory {
  return { ...trajectory(i, step, reward), id: `r-${step}-${i}`, metrics, tokens: { prompt: 10, completion } };
}

/** Steps 1 and 2 of 4 rollouts each with reward components, an eval at step 2, then a val rollout (excluded). */
async function seedSmallRun(workspaceId: string) {
  const runId = await createRunningRun(db(), workspaceId);
  const evs: { type: RunEvent["type"]; payload: unknown }[] = [];
  const rewards = { 1: [0, 0.25, 0.5, 1], 2: [0.5, 0.5, 0.75, 0.9] } as const;
  for (const step of [1, 2] as const) {
    rewards[step].forEach((r, i) => {
      evs.push({ type: "rollout.finished", payload: rollout(i, step, r, { format: r / 2, correct: step === 1 ? 0 : 1, turns: i }, 10 * (i + 1)) });
    });
    evs.push({ type: "step.finished", payload: stepMetrics(step, { reward_mean: step === 1 ? 0.4375 : 0.6625 }) });
  }
  // A validation rollout: not part of the train curves (its huge reward must not reach the min/max band).
  evs.push({ type: "rollout.finished", payload: { ...rollout(9, 2, 99, { format: 50 }, 1000), split: "val" } });
  evs.push({ type: "eval.finished", payload: { step: 2, model: `${runId}@2`, reward_mean: 0.8, reward_std: 0.1, exception_rate: 0, rollouts: 1 } });
  const events = evs.map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: 1_700_000_000_000 + i }));
  await ingestEvents(db(), runId, events);
  // Known wall times: the run started at t0, step 1 stored 10 s later, step 2 at 25 s.
  const t0 = new Date("2026-01-01T00:00:00Z");
  await db().run.update({ where: { id: runId }, data: { startedAt: t0 } });
  await db().step.update({ where: { runId_step: { runId, step: 1 } }, data: { createdAt: new Date(t0.getTime() + 10_000) } });
  await db().step.update({ where: { runId_step: { runId, step: 2 } }, data: { createdAt: new Date(t0.getTime() + 25_000) } });
  await db().runEvent.updateMany({ where: { runId, type: "eval.finished" }, data: { ts: new Date(t0.getTime() + 30_000) } });
  // The Step rows' times were set by hand, not by ingest: their chart rows too (step-series.ts).
  await db().$executeRaw`SELECT "refresh_step_series"(${runId}, ARRAY[1, 2])`;
  return runId;
}

describe("runs.series", () => {
  let ws: string;
  let runId: string;
  beforeAll(async () => {
    ws = await newWorkspace(db());
    runId = await seedSmallRun(ws);
  });

  it("charts the reward mean with its ±std and min/max bands from the train rollouts", async () => {
    const res = await callerFor(db(), ws).runs.series({ runId, x: "step", width: 400 });
    expect(res.steps).toBe(2);
    expect(res.lastStep).toBe(2);
    const reward = res.charts.find((c) => c.id === "reward")!;
    expect(reward.x).toEqual([1, 2]);
    const v = Object.fromEntries(reward.series.map((s) => [s.key, s.values]));
    expect(v.mean).toEqual([0.4375, 0.6625]);
    expect(v.std_lo![0]).toBeCloseTo(0.2375);
    expect(v.std_hi![1]).toBeCloseTo(0.8625);
    expect(v.min).toEqual([0, 0.5]);
    expect(v.max).toEqual([1, 0.9]); // not the val rollout's 99
  });

  it("charts every metrics key (reward components, ctx.metric) as its mean per step, and completion length", async () => {
    const res = await callerFor(db(), ws).runs.series({ runId, x: "step", width: 400, keys: ["components", "completion_tokens"] });
    expect(res.charts.map((c) => c.id)).toEqual(["components", "completion_tokens"]);
    const comp = Object.fromEntries(res.charts[0]!.series.map((s) => [s.key, s.values]));
    expect(Object.keys(comp).sort()).toEqual(["correct", "format", "turns"]);
    expect(comp.format).toEqual([0.21875, 0.33125]);
    expect(comp.correct).toEqual([0, 1]);
    expect(comp.turns).toEqual([1.5, 1.5]);
    expect(res.charts[1]!.series[0]!.values).toEqual([25, 25]);
  });

  it("charts the trainer's metrics and splits step time into rollout, train, checkpoint and idle", async () => {
    const res = await callerFor(db(), ws).runs.series({ runId, x: "step", width: 400 });
    const one = (id: string) => res.charts.find((c) => c.id === id)!.series[0]!.values;
    expect(one("loss")).toEqual([0.1, 0.2]);
    expect(one("kl")).toEqual([0.01, 0.02]);
    expect(one("entropy")).toEqual([2, 2]);
    expect(one("grad_norm")).toEqual([1, 1]);
    expect(one("probs_corr")).toEqual([0.99, 0.99]);
    expect(one("tokens_per_s")).toEqual([40, 40]);
    expect(one("exception_rate")).toEqual([0, 0]);
    const split = Object.fromEntries(res.charts.find((c) => c.id === "step_time")!.series.map((s) => [s.key, s.values[0]]));
    expect(split).toEqual({ rollout: 3, train: 1.5, checkpoint: 0.5, idle: 0.5 });
    const ev = res.charts.find((c) => c.id === "eval_reward")!;
    expect(ev.x).toEqual([2]);
    expect(ev.series.map((s) => s.values[0])).toEqual([0.8, expect.closeTo(0.7) as unknown as number, expect.closeTo(0.9) as unknown as number]);
  });

  it("puts x in wall seconds since the run started, or in cumulative sampled tokens", async () => {
    const time = await callerFor(db(), ws).runs.series({ runId, x: "time", width: 400, keys: ["loss", "eval_reward"] });
    expect(time.charts[0]!.x).toEqual([10, 25]);
    expect(time.charts[1]!.x).toEqual([30]);
    const tokens = await callerFor(db(), ws).runs.series({ runId, x: "tokens", width: 400, keys: ["loss", "eval_reward"] });
    // each step: 4 rollouts × 10 prompt + (10+20+30+40) completion = 140; the val rollout is not counted
    expect(tokens.charts[0]!.x).toEqual([140, 280]);
    expect(tokens.charts[1]!.x).toEqual([280]);
  });

  it("a later call (the live refetch) sees the steps stored since, with their rollouts' bands", async () => {
    const live = await createRunningRun(db(), ws);
    const ev = (seq: number, type: RunEvent["type"], payload: unknown) => RunEvent.parse({ run_id: live, seq, ts: 1_700_000_000_000 + seq, type, payload });
    await ingestEvents(db(), live, [ev(1, "rollout.finished", rollout(0, 1, 0.3, {}, 5)), ev(2, "step.finished", stepMetrics(1))]);
    const first = await callerFor(db(), ws).runs.series({ runId: live, width: 400, keys: ["reward"] });
    expect(first.charts[0]!.x).toEqual([1]);
    // step 2's rollouts are stored, its step.finished not yet: not charted (its band would be partial)
    await ingestEvents(db(), live, [ev(3, "rollout.finished", rollout(0, 2, 0.1, {}, 5))]);
    expect((await callerFor(db(), ws).runs.series({ runId: live, width: 400, keys: ["reward"] })).charts[0]!.x).toEqual([1]);
    await ingestEvents(db(), live, [ev(4, "rollout.finished", rollout(1, 2, 0.9, {}, 5)), ev(5, "step.finished", stepMetrics(2))]);
    const later = await callerFor(db(), ws).runs.series({ runId: live, width: 400, keys: ["reward"] });
    expect(later.charts[0]!.x).toEqual([1, 2]);
    const v = Object.fromEntries(later.charts[0]!.series.map((s) => [s.key, s.values]));
    expect(v.min).toEqual([0.3, 0.1]);
    expect(v.max).toEqual([0.3, 0.9]);
  });

  it("buckets a long run to ≤ 4 × width points per series and keeps a spike", async () => {
    const longRun = await createRunningRun(db(), ws);
    const n = 5_000;
    await db().$executeRaw`INSERT INTO "Step" ("runId", "step", "metrics")
      SELECT ${longRun}, g, jsonb_build_object('step', g, 'reward_mean', CASE WHEN g = 3210 THEN 7 ELSE sin(g / 100.0) END,
        'reward_std_within_group', 0.1, 'exception_rate', 0, 'rollout_s', 1, 'train_s', 1, 'step_s', 2, 'tokens_per_s', 5, 'trainer', null)
      FROM generate_series(1, ${n}::int) g`;
    // Written by hand, not through ingest: their chart rows too (what ingest does per batch, step-series.ts).
    await db().$executeRaw`SELECT "refresh_step_series"(${longRun}, ARRAY(SELECT generate_series(1, ${n}::int)))`;
    const res = await callerFor(db(), ws).runs.series({ runId: longRun, x: "step", width: 100, keys: ["reward", "loss"] });
    const reward = res.charts.find((c) => c.id === "reward")!;
    expect(reward.total).toBe(n);
    expect(reward.x.length).toBeLessThanOrEqual(3 * 4 * 100); // mean + two std bands (min/max are empty: no rollouts)
    const mean = reward.series.find((s) => s.key === "mean")!.values;
    expect(Math.max(...(mean as number[]))).toBe(7);
    expect(reward.x[mean.indexOf(7)]).toBe(3210);
    // no trainer on any step: the loss chart is there, and empty
    expect(res.charts.find((c) => c.id === "loss")!.x).toEqual([]);
  });

  it("refuses bad input naming the field, and other workspaces' runs", async () => {
    await expect(callerFor(db(), ws).runs.series({ runId, x: "step", width: 0 })).rejects.toThrow(/width/);
    await expect(callerFor(db(), ws).runs.series({ runId, x: "pixels" as never, width: 300 })).rejects.toThrow(/x/);
    await expect(callerFor(db(), ws).runs.series({ runId, width: 300, keys: ["nope" as never] })).rejects.toThrow(/keys/);
    const other = await newWorkspace(db());
    await expect(callerFor(db(), other).runs.series({ runId, width: 300 })).rejects.toThrow(/not found/);
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    expect((await viewer.runs.series({ runId, width: 300, keys: ["loss"] })).charts).toHaveLength(1);
  });
});
