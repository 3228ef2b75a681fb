/**
 * The charts' per-step rows ingest keeps (StepSeries, step-series.ts): their rollout aggregates equal what
 * aggregating the run's Trajectory rows gives — the query the charts ran before the table existed — and their
 * Step fields the Step row's, after every batch: a step split across batches, a re-delivered batch, a rollout
 * replaced by a redone step (also one moved to another step), a step.finished re-sent with new metrics, and
 * the migration's backfill of a run stored before it. (Re-scoring writes nothing to a run: features/rescore is
 * a what-if, so there is no re-scored case to keep in step.)
 *
 *   npx vitest run --project server features/metrics/server/step-series.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEvent, type Trajectory } from "@contracts";
import { createRunningRun, createTestDb, newWorkspace, trajectory, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { migrationsDir } from "@/server/db-migrate";

let t: TestDb;
const db = () => t.handle.prisma;
let ws: string;
beforeAll(async () => {
  t = await createTestDb();
  ws = await newWorkspace(db());
});
afterAll(async () => t?.drop());

type Agg = { step: number; rollouts: number; groups: number; rewardMin: number | null; rewardMax: number | null; completionMean: number | null; sampledTokens: number | null; metricMeans: Record<string, number> };

/** The rollout aggregates the table holds for the run, by step. */
async function stored(runId: string): Promise<Agg[]> {
  const rows = await db().stepSeries.findMany({
    where: { runId },
    orderBy: { step: "asc" },
    select: { step: true, rollouts: true, groups: true, rewardMin: true, rewardMax: true, completionMean: true, sampledTokens: true, metricMeans: true },
  });
  return rows.map((r) => ({ ...r, metricMeans: r.metricMeans as Record<string, number> }));
}

/** The Step fields the table holds for the run's steps that have a Step row, and the reference from Step rows. */
async function stepFields(runId: string) {
  const got = await db().stepSeries.findMany({
    where: { runId, at: { not: null } },
    orderBy: { step: "asc" },
    select: { step: true, at: true, rewardMean: true, rewardStd: true, exceptionRate: true, tokensPerS: true, rolloutS: true, trainS: true, stepS: true, loss: true, kl: true, entropy: true, gradNorm: true, probsCorr: true, checkpointS: true },
  });
  const steps = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" } });
  const want = steps.map(({ step, createdAt, metrics }) => {
    const m = metrics as Record<string, unknown> & { trainer: Record<string, number> | null };
    const tr = m.trainer ?? {};
    return {
      step,
      at: createdAt.getTime() / 1000,
      rewardMean: m.reward_mean ?? null,
      rewardStd: m.reward_std_within_group ?? null,
      exceptionRate: m.exception_rate ?? null,
      tokensPerS: m.tokens_per_s ?? null,
      rolloutS: m.rollout_s ?? null,
      trainS: m.train_s ?? null,
      stepS: m.step_s ?? null,
      loss: tr.loss ?? null,
      kl: tr.kl ?? null,
      entropy: tr.entropy ?? null,
      gradNorm: tr.grad_norm ?? null,
      probsCorr: tr.probs_corr ?? null,
      checkpointS: tr.checkpoint_s ?? null,
    };
  });
  return { got, want };
}

/**
 * The reference: the run's train Trajectory rows aggregated per step, as the charts' query did before the
 * table (features/metrics/server/run-series-columns.ts at 97bc11a): min/max reward, mean completion, summed
 * prompt + completion, and each metrics key's mean over the rollouts where it is a number.
 */
async function fromTrajectories(runId: string): Promise<Agg[]> {
  const base = await db().$queryRaw<Omit<Agg, "metricMeans">[]>`
    SELECT step, count(*)::int AS rollouts, count(DISTINCT "group")::int AS groups, min(reward) AS "rewardMin", max(reward) AS "rewardMax",
      avg((tokens->>'completion')::float8) AS "completionMean",
      sum((tokens->>'prompt')::float8 + (tokens->>'completion')::float8) AS "sampledTokens"
    FROM "Trajectory" WHERE "runId" = ${runId} AND split = 'train' GROUP BY step ORDER BY step`;
  const keys = await db().$queryRaw<{ step: number; key: string; mean: number }[]>`
    SELECT t.step, k.key, avg(CASE WHEN jsonb_typeof(t.metrics->k.key) = 'number' THEN (t.metrics->>k.key)::float8 END) AS mean
    FROM "Trajectory" t CROSS JOIN LATERAL jsonb_object_keys(t.metrics) AS k(key)
    WHERE t."runId" = ${runId} AND t.split = 'train' GROUP BY t.step, k.key`;
  return base.map((b) => ({ ...b, metricMeans: Object.fromEntries(keys.filter((k) => k.step === b.step).map((k) => [k.key, k.mean])) }));
}

/** The table equals the reference (means to float rounding: the two sum in different orders). */
async function expectInStep(runId: string) {
  const fields = await stepFields(runId);
  expect(fields.got).toEqual(fields.want);
  const [all, want] = await Promise.all([stored(runId), fromTrajectories(runId)]);
  // Steps with a Step row and no train rollout have a row of their own (no rollouts, no aggregates).
  const got = all.filter((g) => g.rollouts > 0);
  for (const g of all.filter((g) => g.rollouts === 0)) expect(g).toEqual({ step: g.step, rollouts: 0, groups: 0, rewardMin: null, rewardMax: null, completionMean: null, sampledTokens: null, metricMeans: {} });
  expect(got.map((g) => g.step)).toEqual(want.map((w) => w.step));
  got.forEach((g, i) => {
    const w = want[i]!;
    expect({ ...g, completionMean: null, metricMeans: Object.keys(g.metricMeans).sort() }).toEqual({ ...w, completionMean: null, metricMeans: Object.keys(w.metricMeans).sort() });
    expect(g.completionMean).toBeCloseTo(w.completionMean!, 12);
    for (const [k, v] of Object.entries(w.metricMeans)) expect(g.metricMeans[k]).toBeCloseTo(v, 12);
  });
  return got;
}

function rollout(id: string, step: number, reward: number | null, metrics: Record<string, number>, completion: number, split: "train" | "val" = "train", group = 0): Trajectory {
  return { ...trajectory(0, step, reward), id, split, group, metrics, tokens: { prompt: 7, completion } };
}

function eventsFor(runId: string) {
  let seq = 0;
  return (type: RunEvent["type"], payload: unknown) => RunEvent.parse({ run_id: runId, seq: ++seq, ts: 1_700_000_000_000 + seq, type, payload });
}

function stepFinished(step: number, rewardMean = 0.5) {
  return {
    step,
    reward_mean: rewardMean,
    reward_std_within_group: 0.1,
    exception_rate: 0,
    groups_trainable: 1,
    rollouts: 4,
    rollout_s: 1,
    train_s: 1,
    step_s: 2,
    tokens_per_s: 10,
    judge_tokens: 0,
    judge_cost_usd: 0,
    trainer: step % 2 ? null : { loss: 0.1 * step, grad_norm: 1, kl: 0.01, clip_fraction: 0, entropy: 2, probs_corr: 0.99, trained_tokens: 10, groups_submitted: 1, groups_trainable: 1, skipped: false, duration_s: 1, checkpoint_s: 0.25 },
  };
}

describe("StepSeries (the charts' per-step rows, kept at ingest)", () => {
  it("equals the aggregation of the stored trajectories after each batch, a step split across batches included", async () => {
    const runId = await createRunningRun(db(), ws);
    const ev = eventsFor(runId);
    const first = [
      ev("rollout.finished", rollout("a", 1, 0.25, { format: 0.5, correct: 0 }, 10)),
      ev("rollout.finished", rollout("b", 1, 1, { format: 1, correct: 1, bonus: 3 }, 30, "train", 1)),
      ev("rollout.finished", rollout("c", 1, null, {}, 5)), // a failed rollout: no reward, no metrics
      ev("step.finished", stepFinished(1)),
      ev("rollout.finished", rollout("d", 2, 0.1, { format: 0.2 }, 12)),
      ev("rollout.finished", rollout("v", 2, 99, { format: 50 }, 1000, "val")), // not a train rollout
    ];
    await ingestEvents(db(), runId, first);
    let got = await expectInStep(runId);
    expect(got).toEqual([
      { step: 1, rollouts: 3, groups: 2, rewardMin: 0.25, rewardMax: 1, completionMean: 15, sampledTokens: 66, metricMeans: { format: 0.75, correct: 0.5, bonus: 3 } },
      { step: 2, rollouts: 1, groups: 1, rewardMin: 0.1, rewardMax: 0.1, completionMean: 12, sampledTokens: 19, metricMeans: { format: 0.2 } },
    ]);
    // Step 2's other rollouts arrive in the next batch: its row covers both batches.
    await ingestEvents(db(), runId, [ev("rollout.finished", rollout("e", 2, 0.7, { format: 0.4, correct: 1 }, 20)), ev("step.finished", stepFinished(2))]);
    got = await expectInStep(runId);
    expect(got[1]).toMatchObject({ step: 2, rollouts: 2, rewardMin: 0.1, rewardMax: 0.7, completionMean: 16, sampledTokens: 46 });
    expect(got[1]!.metricMeans.format).toBeCloseTo(0.3, 12);
    expect(got[1]!.metricMeans.correct).toBe(1);
  });

  it("does not count a re-delivered batch twice (the same batch again, and one overlapping what is stored)", async () => {
    const runId = await createRunningRun(db(), ws);
    const ev = eventsFor(runId);
    const batch = [1, 2, 3, 4].map((i) => ev("rollout.finished", rollout(`r${i}`, 1, i / 4, { format: i }, i * 10)));
    await ingestEvents(db(), runId, batch);
    const once = await expectInStep(runId);
    expect(once).toEqual([{ step: 1, rollouts: 4, groups: 1, rewardMin: 0.25, rewardMax: 1, completionMean: 25, sampledTokens: 128, metricMeans: { format: 2.5 } }]);
    await ingestEvents(db(), runId, batch); // a reconnect re-sends it whole
    expect(await stored(runId)).toEqual(once);
    // A step.finished re-sent with other metrics (a redone step): the newest wins, as in the Step row.
    await ingestEvents(db(), runId, [ev("step.finished", stepFinished(1, 0.25))]);
    await ingestEvents(db(), runId, [ev("step.finished", stepFinished(1, 0.75))]);
    expect((await stepFields(runId)).got[0]!.rewardMean).toBe(0.75);
    expect(await stored(runId)).toEqual(once);
    // A runner replay: the stored tail again, then new rollouts of the same step.
    await ingestEvents(db(), runId, [...batch.slice(2), ev("rollout.finished", rollout("r5", 1, 0, { format: 5 }, 50))]);
    const after = await expectInStep(runId);
    expect(after).toEqual([{ step: 1, rollouts: 5, groups: 1, rewardMin: 0, rewardMax: 1, completionMean: 30, sampledTokens: 185, metricMeans: { format: 3 } }]);
  });

  it("follows a rollout replaced by a redone step (a resume), and one re-emitted into another step", async () => {
    const runId = await createRunningRun(db(), ws);
    const ev = eventsFor(runId);
    await ingestEvents(db(), runId, [
      ev("rollout.finished", rollout("x", 3, 0.9, { format: 1 }, 40)),
      ev("rollout.finished", rollout("y", 3, 0.1, { format: 0 }, 20)),
      ev("rollout.finished", rollout("z", 4, 0.5, { other: 2 }, 10)),
    ]);
    await expectInStep(runId);
    // The step is redone after a resume: x comes again with another reward and metrics (latest by seq wins).
    await ingestEvents(db(), runId, [ev("rollout.finished", rollout("x", 3, 0.3, { correct: 1 }, 60))]);
    let got = await expectInStep(runId);
    expect(got[0]).toEqual({ step: 3, rollouts: 2, groups: 1, rewardMin: 0.1, rewardMax: 0.3, completionMean: 40, sampledTokens: 94, metricMeans: { format: 0, correct: 1 } });
    // z re-emitted under step 5: step 4 has no train rollout left, so no row; step 5 has it.
    await ingestEvents(db(), runId, [ev("rollout.finished", rollout("z", 5, 0.5, { other: 2 }, 10))]);
    got = await expectInStep(runId);
    expect(got.map((g) => g.step)).toEqual([3, 5]);
  });

  it("a rollout whose prompt count is unknown (an ART client's, tokens.prompt null) adds its completion, not nothing", async () => {
    const runId = await createRunningRun(db(), ws);
    const ev = eventsFor(runId);
    const unknown = (id: string, completion: number) => ({ ...rollout(id, 1, 1, {}, completion), tokens: { prompt: null, completion } });
    await ingestEvents(db(), runId, [ev("rollout.finished", unknown("p", 40)), ev("rollout.finished", unknown("q", 30)), ev("rollout.finished", rollout("k", 1, 0, {}, 10))]);
    expect(await stored(runId)).toMatchObject([{ step: 1, rollouts: 3, sampledTokens: 40 + 30 + 7 + 10 }]);
  });

  it("the migration's backfill gives a run stored before the table the same rows", async () => {
    const runId = await createRunningRun(db(), ws);
    const ev = eventsFor(runId);
    await ingestEvents(db(), runId, [
      ev("rollout.finished", rollout("p", 1, 0.2, { format: 0.1 }, 11)),
      ev("rollout.finished", rollout("q", 1, 0.6, { format: 0.3, correct: 1 }, 13)),
      ev("rollout.finished", rollout("s", 2, 0.4, {}, 17)),
      ev("step.finished", stepFinished(2)),
      ev("step.finished", stepFinished(3)), // a step with no train rollout
    ]);
    await expectInStep(runId);
    const kept = await stored(runId);
    const keptFields = (await stepFields(runId)).got;
    expect(keptFields.map((f) => f.step)).toEqual([2, 3]);
    await db().stepSeries.deleteMany({ where: { runId } }); // as if stored before the migration
    const dir = fs.readdirSync(migrationsDir).find((d) => d.endsWith("_step_series"))!;
    const sql = fs.readFileSync(path.join(migrationsDir, dir, "migration.sql"), "utf8");
    const backfill = sql.slice(sql.indexOf("-- Backfill"));
    expect(backfill).toMatch(/refresh_step_series/);
    await db().$executeRawUnsafe(backfill.replace(/;\s*$/, ""));
    expect(await stored(runId)).toEqual(kept);
    expect((await stepFields(runId)).got).toEqual(keptFields);
  });
});
