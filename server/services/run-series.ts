/**
 * A train run's curves for the charts, per step, bucketed to the chart's pixel width (M4, series-m4.ts):
 *
 * - from Step rows (StepMetrics json): reward mean ± std within groups, exception rate, tokens/s, the step
 *   time split (rollout, train, checkpoint, idle), and the trainer's loss, KL, entropy, grad norm, probs_corr;
 * - from the step's train Trajectory rows: reward min/max band, mean completion length, sampled tokens (the
 *   tokens x axis), and the mean of each `metrics` key — reward components and ctx.metric values;
 * - from eval.finished events: eval reward ± std.
 *
 * x is the step, wall seconds since the run started (the Step row's write time: ingest stores it within a
 * batch of the event), or cumulative sampled tokens (prompt + completion of the train rollouts so far — what
 * the run generated; trained_tokens is absent on steps the trainer skipped).
 *
 * SQL does the per-step work (casting json fields, grouping trajectories by step, one row per step); the
 * bucketing runs in TypeScript (see series-m4.ts for why).
 */
import { z } from "zod";
import { AppError } from "../errors";
import type { DbOrTx } from "./types";
import { m4UnionIndices } from "./series-m4";

export const SERIES_CHARTS = [
  "reward",
  "components",
  "exception_rate",
  "loss",
  "kl",
  "entropy",
  "grad_norm",
  "probs_corr",
  "completion_tokens",
  "tokens_per_s",
  "step_time",
  "eval_reward",
] as const;
export type SeriesChartId = (typeof SERIES_CHARTS)[number];
export const SeriesX = z.enum(["step", "time", "tokens"]);
export type SeriesX = z.infer<typeof SeriesX>;

export const RunSeriesInput = z.object({
  runId: z.string().min(1).max(100),
  /** Which charts (all when absent). */
  keys: z.array(z.enum(SERIES_CHARTS)).max(SERIES_CHARTS.length).optional(),
  x: SeriesX.default("step"),
  /** The chart's plot width in pixels: one M4 bucket per pixel column. */
  width: z.number().int().min(16).max(8192),
});
export type RunSeriesInput = z.input<typeof RunSeriesInput>;

export interface SeriesChart {
  id: SeriesChartId;
  /** Shared by the chart's series, ascending. */
  x: number[];
  /** values[i] belongs to x[i]; null = no value at that x (the line spans it). */
  series: { key: string; values: (number | null)[] }[];
  /** Points per series before bucketing. */
  total: number;
}

export interface RunSeries {
  x: SeriesX;
  width: number;
  /** Steps stored; the client compares it with the stream's newest step to know when to refetch. */
  steps: number;
  lastStep: number | null;
  charts: SeriesChart[];
}

interface StepRow {
  step: number;
  at: number;
  reward_mean: number | null;
  reward_std: number | null;
  exception_rate: number | null;
  tokens_per_s: number | null;
  rollout_s: number | null;
  train_s: number | null;
  step_s: number | null;
  loss: number | null;
  kl: number | null;
  entropy: number | null;
  grad_norm: number | null;
  probs_corr: number | null;
  checkpoint_s: number | null;
}

type Col = (number | null)[];

const STEP_FIELDS: Record<Exclude<keyof StepRow, "step" | "at">, string> = {
  reward_mean: `metrics->>'reward_mean'`,
  reward_std: `metrics->>'reward_std_within_group'`,
  exception_rate: `metrics->>'exception_rate'`,
  tokens_per_s: `metrics->>'tokens_per_s'`,
  rollout_s: `metrics->>'rollout_s'`,
  train_s: `metrics->>'train_s'`,
  step_s: `metrics->>'step_s'`,
  loss: `metrics->'trainer'->>'loss'`,
  kl: `metrics->'trainer'->>'kl'`,
  entropy: `metrics->'trainer'->>'entropy'`,
  grad_norm: `metrics->'trainer'->>'grad_norm'`,
  probs_corr: `metrics->'trainer'->>'probs_corr'`,
  checkpoint_s: `metrics->'trainer'->>'checkpoint_s'`,
};

/**
 * One row per step as parallel arrays (array_agg): a single result row instead of 100,000 row objects
 * through the driver, which is several times cheaper to decode.
 */
async function loadSteps(db: DbOrTx, runId: string): Promise<{ step: number[]; at: number[]; cols: Record<string, Col> }> {
  const fields = Object.entries(STEP_FIELDS)
    .map(([name, expr]) => `array_agg((${expr})::float8 ORDER BY step) AS "${name}"`)
    .join(",\n  ");
  const rows = await db.$queryRawUnsafe<Record<string, Col | null>[]>(
    `SELECT array_agg(step ORDER BY step) AS step,
  array_agg(EXTRACT(EPOCH FROM "createdAt")::float8 ORDER BY step) AS at,
  ${fields}
FROM "Step" WHERE "runId" = $1`,
    runId,
  );
  const row = rows[0] ?? {};
  const step = (row.step ?? []) as number[];
  const cols: Record<string, Col> = {};
  for (const name of Object.keys(STEP_FIELDS)) cols[name] = row[name] ?? [];
  return { step, at: (row.at ?? []) as number[], cols };
}

/** Per step of the train split: reward min/max, mean completion length, sampled tokens. */
async function loadRolloutAggregates(db: DbOrTx, runId: string) {
  return db.$queryRaw<{ step: number; reward_min: number | null; reward_max: number | null; completion: number | null; tokens: number | null }[]>`
    SELECT step, min(reward) AS reward_min, max(reward) AS reward_max,
      avg((tokens->>'completion')::float8) AS completion,
      sum((tokens->>'prompt')::float8 + (tokens->>'completion')::float8) AS tokens
    FROM "Trajectory" WHERE "runId" = ${runId} AND split = 'train'
    GROUP BY step ORDER BY step`;
}

/** Per step and `metrics` key (reward components, ctx.metric values): the mean over the step's train rollouts. */
async function loadMetricMeans(db: DbOrTx, runId: string) {
  return db.$queryRaw<{ step: number; key: string; mean: number }[]>`
    SELECT t.step, m.key, avg((m.value)::float8) AS mean
    FROM "Trajectory" t CROSS JOIN LATERAL jsonb_each(t.metrics) m
    WHERE t."runId" = ${runId} AND t.split = 'train' AND jsonb_typeof(m.value) = 'number'
    GROUP BY t.step, m.key ORDER BY m.key`;
}

async function loadEvals(db: DbOrTx, runId: string) {
  const rows = await db.runEvent.findMany({ where: { runId, type: "eval.finished" }, orderBy: { seq: "asc" }, select: { payload: true, ts: true } });
  return rows.map((r) => {
    const p = r.payload as { step: number; reward_mean: number | null; reward_std: number | null };
    return { step: p.step, mean: p.reward_mean, std: p.reward_std, at: r.ts.getTime() / 1000 };
  });
}

const sub = (a: number | null | undefined, b: number | null | undefined) => (a == null || b == null ? null : a - b);
const add = (a: number | null | undefined, b: number | null | undefined) => (a == null || b == null ? null : a + b);

/** A chart bucketed over xs (ascending): the union of its series' M4 picks. */
function bucketed(id: SeriesChartId, xs: readonly number[], series: { key: string; values: Col }[], width: number): SeriesChart {
  const idx = m4UnionIndices(xs, series.map((s) => s.values), width);
  return {
    id,
    x: idx.map((i) => xs[i]!),
    series: series.map((s) => ({ key: s.key, values: idx.map((i) => s.values[i] ?? null) })),
    total: xs.length,
  };
}

/** Reorders parallel columns so xs ascend (wall time can step back when a resumed run redoes a step). */
function sortByX(xs: number[], cols: Col[]): { xs: number[]; cols: Col[] } {
  let sorted = true;
  for (let i = 1; i < xs.length && sorted; i++) if (xs[i]! < xs[i - 1]!) sorted = false;
  if (sorted) return { xs, cols };
  const order = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]! || a - b);
  return { xs: order.map((i) => xs[i]!), cols: cols.map((c) => order.map((i) => c[i] ?? null)) };
}

export async function runSeries(db: DbOrTx, workspaceId: string, raw: RunSeriesInput): Promise<RunSeries> {
  const input = RunSeriesInput.parse(raw);
  const run = await db.run.findFirst({ where: { id: input.runId, workspaceId }, select: { startedAt: true, createdAt: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
  const want = new Set<SeriesChartId>(input.keys ?? SERIES_CHARTS);
  const needRollouts = want.has("reward") || want.has("completion_tokens") || input.x === "tokens";

  const [steps, aggs, metricMeans, evals] = await Promise.all([
    loadSteps(db, input.runId),
    needRollouts ? loadRolloutAggregates(db, input.runId) : Promise.resolve([]),
    want.has("components") ? loadMetricMeans(db, input.runId) : Promise.resolve([]),
    want.has("eval_reward") ? loadEvals(db, input.runId) : Promise.resolve([]),
  ]);
  const n = steps.step.length;
  const rowOf = new Map<number, number>();
  steps.step.forEach((s, i) => rowOf.set(s, i));
  const perStep = (): Col => new Array<number | null>(n).fill(null);

  const rewardMin = perStep();
  const rewardMax = perStep();
  const completion = perStep();
  const sampled = new Array<number>(n).fill(0);
  for (const a of aggs) {
    const i = rowOf.get(a.step);
    if (i === undefined) continue; // a step still sampling: no Step row yet
    rewardMin[i] = a.reward_min;
    rewardMax[i] = a.reward_max;
    completion[i] = a.completion;
    sampled[i] = Number(a.tokens ?? 0);
  }
  const cumTokens: number[] = [];
  sampled.reduce((acc, t, i) => (cumTokens[i] = acc + t), 0);

  const origin = (run.startedAt ?? run.createdAt).getTime() / 1000;
  const xOf = (i: number) => (input.x === "step" ? steps.step[i]! : input.x === "time" ? steps.at[i]! - origin : cumTokens[i]!);
  const c = steps.cols;

  // Every chart's columns, in step order.
  const defs: { id: SeriesChartId; series: { key: string; values: Col }[] }[] = [];
  const def = (id: SeriesChartId, series: () => { key: string; values: Col }[]) => {
    if (want.has(id) && id !== "eval_reward") defs.push({ id, series: series() });
  };
  def("reward", () => [
    { key: "mean", values: c.reward_mean! },
    { key: "std_lo", values: c.reward_mean!.map((m, i) => sub(m, c.reward_std![i])) },
    { key: "std_hi", values: c.reward_mean!.map((m, i) => add(m, c.reward_std![i])) },
    { key: "min", values: rewardMin },
    { key: "max", values: rewardMax },
  ]);
  def("components", () => {
    const byKey = new Map<string, Col>();
    for (const m of metricMeans) {
      const i = rowOf.get(m.step);
      if (i === undefined) continue;
      if (!byKey.has(m.key)) byKey.set(m.key, perStep());
      byKey.get(m.key)![i] = m.mean;
    }
    return [...byKey].map(([key, values]) => ({ key, values }));
  });
  for (const id of ["exception_rate", "loss", "kl", "entropy", "grad_norm", "probs_corr", "tokens_per_s"] as const) {
    def(id, () => [{ key: id, values: c[id]! }]);
  }
  def("completion_tokens", () => [{ key: "completion_tokens", values: completion }]);
  def("step_time", () => {
    const ck = c.checkpoint_s!;
    return [
      { key: "rollout", values: c.rollout_s! },
      // train_s is the engine call, checkpoint write included: the split shows the two apart.
      { key: "train", values: c.train_s!.map((t, i) => sub(t, ck[i] ?? 0)) },
      { key: "checkpoint", values: ck },
      {
        key: "idle",
        values: c.step_s!.map((s, i) => {
          const busy = add(c.rollout_s![i], c.train_s![i]);
          return s == null || busy == null ? null : Math.max(0, s - busy);
        }),
      },
    ];
  });

  const xsRaw = Array.from({ length: n }, (_, i) => xOf(i));
  const charts: SeriesChart[] = defs.map((d) => {
    const { xs, cols } = sortByX(xsRaw, d.series.map((s) => s.values));
    return bucketed(d.id, xs, d.series.map((s, k) => ({ key: s.key, values: cols[k]! })), input.width);
  });

  if (want.has("eval_reward")) {
    // Tokens sampled up to the eval's step: binary search for the last step ≤ it (step 0: none yet).
    const tokensAt = (step: number) => {
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (steps.step[mid]! <= step) lo = mid + 1;
        else hi = mid;
      }
      return lo > 0 ? cumTokens[lo - 1]! : 0;
    };
    const ex = evals.map((e) => (input.x === "step" ? e.step : input.x === "time" ? e.at - origin : tokensAt(e.step)));
    const { xs, cols } = sortByX(ex, [
      evals.map((e) => e.mean),
      evals.map((e) => sub(e.mean, e.std)),
      evals.map((e) => add(e.mean, e.std)),
    ]);
    charts.push(
      bucketed("eval_reward", xs, [
        { key: "mean", values: cols[0]! },
        { key: "std_lo", values: cols[1]! },
        { key: "std_hi", values: cols[2]! },
      ], input.width),
    );
  }

  return { x: input.x, width: input.width, steps: n, lastStep: n ? steps.step[n - 1]! : null, charts };
}
