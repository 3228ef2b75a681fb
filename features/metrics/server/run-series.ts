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
 * SQL does the per-step work (run-series-columns.ts: casting json fields, grouping trajectories by step,
 * cached per run so a live refetch reads only new steps); the bucketing runs in TypeScript (series-m4.ts
 * says why).
 */
import { z } from "zod";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";
import { m4UnionIndices } from "./series-m4";
import { runColumns, type Col } from "./run-series-columns";

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
  /** Steps stored (points per series before bucketing). */
  steps: number;
  lastStep: number | null;
  charts: SeriesChart[];
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

  const [steps, evals] = await Promise.all([
    runColumns(db, input.runId),
    want.has("eval_reward") ? loadEvals(db, input.runId) : Promise.resolve([]),
  ]);
  const n = steps.step.length;
  const cumTokens: number[] = [];
  steps.sampled.reduce((acc, t, i) => (cumTokens[i] = acc + t), 0);

  const origin = (run.startedAt ?? run.createdAt).getTime() / 1000;
  const xOf = (i: number) => (input.x === "step" ? steps.step[i]! : input.x === "time" ? steps.at[i]! - origin : cumTokens[i]!);
  const c = steps.cols;

  // Every chart's columns, in step order.
  const defs: { id: SeriesChartId; series: { key: string; values: Col }[] }[] = [];
  const def = (id: SeriesChartId, series: () => { key: string; values: Col }[]) => {
    if (want.has(id) && id !== "eval_reward") defs.push({ id, series: series() });
  };
  def("reward", () => [
    { key: "mean", values: c.reward_mean },
    { key: "std_lo", values: c.reward_mean.map((m, i) => sub(m, c.reward_std[i])) },
    { key: "std_hi", values: c.reward_mean.map((m, i) => add(m, c.reward_std[i])) },
    { key: "min", values: steps.rewardMin },
    { key: "max", values: steps.rewardMax },
  ]);
  def("components", () => [...steps.metricMeans].map(([key, values]) => ({ key, values })));
  for (const id of ["exception_rate", "loss", "kl", "entropy", "grad_norm", "probs_corr", "tokens_per_s"] as const) {
    def(id, () => [{ key: id, values: c[id] }]);
  }
  def("completion_tokens", () => [{ key: "completion_tokens", values: steps.completion }]);
  def("step_time", () => {
    const ck = c.checkpoint_s;
    return [
      { key: "rollout", values: c.rollout_s },
      // train_s is the engine call, checkpoint write included: the split shows the two apart.
      { key: "train", values: c.train_s.map((t, i) => sub(t, ck[i] ?? 0)) },
      { key: "checkpoint", values: ck },
      {
        key: "idle",
        values: c.step_s.map((s, i) => {
          const busy = add(c.rollout_s[i], c.train_s[i]);
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
