/**
 * A train run's per-step columns for runs.series, read from Postgres and kept in memory per run so the
 * live charts' refetch (every couple of seconds while a run trains) reads only the steps stored since.
 *
 * They come from StepSeries (step-series.ts): one row per step that ingest keeps — the Step row's chart fields
 * and the aggregates of the step's train rollouts (reward min/max, mean completion length, sampled tokens,
 * the mean of each `metrics` key) as typed columns — sent as one binary string (see loadSeries).
 *
 * A step is final once its Step row exists: its rollouts were stored before its step.finished (ingest keeps
 * event order), and a resumed run redoes only steps after its newest checkpoint, which come after the last
 * step.finished. So the cache appends steps above the highest one it holds and never rewrites one; only
 * steps that have a Step row (StepSeries.at set) are read (a step still sampling is left for later).
 */
import type { DbOrTx } from "@/server/db-types";

export type Col = (number | null)[];

/** Each Step chart field, as its StepSeries column. */
const STEP_FIELDS = {
  reward_mean: "rewardMean",
  reward_std: "rewardStd",
  exception_rate: "exceptionRate",
  tokens_per_s: "tokensPerS",
  rollout_s: "rolloutS",
  train_s: "trainS",
  step_s: "stepS",
  loss: "loss",
  kl: "kl",
  entropy: "entropy",
  grad_norm: "gradNorm",
  probs_corr: "probsCorr",
  checkpoint_s: "checkpointS",
} as const;
export type StepField = keyof typeof STEP_FIELDS;

export interface RunColumns {
  step: number[];
  /** The Step row's write time, epoch seconds. */
  at: number[];
  cols: Record<StepField, Col>;
  rewardMin: Col;
  rewardMax: Col;
  completion: Col;
  /** Prompt + completion tokens of the step's train rollouts. */
  sampled: number[];
  /** `metrics` key → its mean per step. */
  metricMeans: Map<string, Col>;
}

const MAX_RUNS = 16;
const cache = new Map<string, RunColumns>();

function empty(): RunColumns {
  const cols = Object.fromEntries(Object.keys(STEP_FIELDS).map((k) => [k, []])) as unknown as Record<StepField, Col>;
  return { step: [], at: [], cols, rewardMin: [], rewardMax: [], completion: [], sampled: [], metricMeans: new Map() };
}

/** The most `metrics` keys charted (the first by name): a chart of more lines than this is unreadable anyway. */
const MAX_METRIC_KEYS = 40;

const ROLLOUT_COLUMNS = ["rewardMin", "rewardMax", "completionMean", "sampledTokens"] as const;

/**
 * The final steps above `after` (those with a Step row), every column of each, in step order.
 *
 * One query, one value: per row its numbers as big-endian float8s (float8send; NaN = null, which json
 * cannot carry), concatenated over the rows into one bytea, sent as base64 text and read with a DataView:
 * 100,000 steps decode in milliseconds, where the same numbers as text (split, then Number() each) took
 * seconds on a loaded machine, and a row object per step through the driver more. Base64, not the bytea
 * itself: the driver adapter's handling of a 15 MB bytea cost more than the query. No ORDER BY: sorting
 * 100,000 byte strings in Postgres cost more than ordering indices here (the primary key's order usually holds).
 * The `metrics` keys are read first, so each key's mean is a plain column of the same scan.
 */
async function loadSeries(db: DbOrTx, runId: string, after: number) {
  const keyRows = await db.$queryRaw<{ key: string }[]>`
    SELECT DISTINCT jsonb_object_keys("metricMeans") AS key FROM "StepSeries"
    WHERE "runId" = ${runId} AND "step" > ${after} AND "at" IS NOT NULL`;
  const keys = keyRows.map((r) => r.key).sort((a, b) => a.localeCompare(b)).slice(0, MAX_METRIC_KEYS);
  const names = Object.keys(STEP_FIELDS) as StepField[];
  const exprs = [
    `"step"::float8`,
    `"at"`,
    ...names.map((n) => `"${STEP_FIELDS[n]}"`),
    ...ROLLOUT_COLUMNS.map((c) => `"${c}"`),
    ...keys.map((_, i) => `jsonb_float8("metricMeans"->($${i + 3}::text))`),
  ];
  const rows = await db.$queryRawUnsafe<{ packed: string | null }[]>(
    `SELECT encode(string_agg(${exprs.map((e) => `float8send(coalesce(${e}, 'NaN'::float8))`).join(" || ")}, ''::bytea), 'base64') AS packed
FROM "StepSeries" WHERE "runId" = $1 AND "step" > $2 AND "at" IS NOT NULL`,
    runId,
    after,
    ...keys,
  );
  // Big-endian float8s to little-endian (x86 and ARM hosts) in one native pass, read as a Float64Array (an aligned copy).
  const bytes = Buffer.from(rows[0]?.packed ?? "", "base64");
  const width = exprs.length;
  const f = new Float64Array(bytes.swap64().buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const n = f.length / width;
  const order = Array.from({ length: n }, (_, i) => i);
  let sorted = true;
  for (let i = 1; i < n && sorted; i++) sorted = f[(i - 1) * width]! < f[i * width]!;
  if (!sorted) order.sort((a, b) => f[a * width]! - f[b * width]!);
  const column = (col: number): Col => {
    const out = new Array<number | null>(n);
    for (let i = 0; i < n; i++) {
      const v = f[order[i]! * width + col]!;
      out[i] = v === v ? v : null; // NaN = null
    }
    return out;
  };
  const cols = Object.fromEntries(names.map((name, k) => [name, column(2 + k)])) as Record<StepField, Col>;
  const base = 2 + names.length;
  return {
    step: column(0) as number[],
    at: column(1) as number[],
    cols,
    rewardMin: column(base),
    rewardMax: column(base + 1),
    completion: column(base + 2),
    sampled: column(base + 3).map((v) => v ?? 0),
    metricMeans: new Map(keys.map((key, i) => [key, column(base + 4 + i)])),
  };
}

/** The run's columns, every stored step; reads only what is newer than the cached copy. */
export async function runColumns(db: DbOrTx, runId: string): Promise<RunColumns> {
  const held = cache.get(runId) ?? empty();
  const before = held.step.length;
  const fresh = await loadSeries(db, runId, before ? held.step[before - 1]! : -1);
  const added = fresh.step.length;
  let next = held;
  if (added > 0) {
    // A key new in these steps is null before them; a key they lack is null in them.
    const keys = [...new Set([...held.metricMeans.keys(), ...fresh.metricMeans.keys()])].sort((a, b) => a.localeCompare(b)).slice(0, MAX_METRIC_KEYS);
    next = {
      step: held.step.concat(fresh.step),
      at: held.at.concat(fresh.at),
      cols: Object.fromEntries(Object.entries(held.cols).map(([k, c]) => [k, c.concat(fresh.cols[k as StepField])])) as Record<StepField, Col>,
      rewardMin: held.rewardMin.concat(fresh.rewardMin),
      rewardMax: held.rewardMax.concat(fresh.rewardMax),
      completion: held.completion.concat(fresh.completion),
      sampled: held.sampled.concat(fresh.sampled),
      metricMeans: new Map(
        keys.map((k) => [k, (held.metricMeans.get(k) ?? new Array<null>(before).fill(null)).concat(fresh.metricMeans.get(k) ?? new Array<null>(added).fill(null))]),
      ),
    };
  }
  // Most recently used last, so the least recently used run is dropped first.
  cache.delete(runId);
  cache.set(runId, next);
  if (cache.size > MAX_RUNS) cache.delete(cache.keys().next().value!);
  return next;
}

/** Drops a run's cached columns (tests, and a run whose rows were rewritten). */
export function forgetRunColumns(runId: string): void {
  cache.delete(runId);
}
