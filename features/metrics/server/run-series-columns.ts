/**
 * A train run's per-step columns for runs.series, read from Postgres and kept in memory per run so the
 * live charts' refetch (every couple of seconds while a run trains) reads only the steps stored since:
 *
 * - Step rows (StepMetrics json) cast to numbers in SQL;
 * - per step, its train rollouts' aggregates, kept at ingest in StepRollouts (step-rollouts.ts): reward
 *   min/max, mean completion length, sampled tokens (prompt + completion), and the mean of each `metrics` key
 *   (reward components, ctx.metric values).
 *
 * A step is final once its Step row exists: its rollouts were stored before its step.finished (ingest keeps
 * event order), and a resumed run redoes only steps after its newest checkpoint, which come after the last
 * step.finished. So the cache appends steps above the highest one it holds and never rewrites one; only
 * the aggregates of steps that already have a Step row are read (a step still sampling is left for later).
 */
import type { DbOrTx } from "@/server/db-types";

export type Col = (number | null)[];

const STEP_FIELDS = {
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

/**
 * Step rows above `after` as one string, a step per `;`-separated record of `,`-separated numbers (empty =
 * null): one sort and one result value. Postgres 15 sorts once per `array_agg(… ORDER BY step)`, so parallel
 * arrays cost 14 sorts, and a row object per step through the driver costs more than splitting one string.
 */
async function loadSteps(db: DbOrTx, runId: string, after: number) {
  const names = Object.keys(STEP_FIELDS) as StepField[];
  const fields = names.map((name) => `coalesce((${STEP_FIELDS[name]})::float8::text, '')`).join(", ");
  const rows = await db.$queryRawUnsafe<{ packed: string | null }[]>(
    `SELECT string_agg(concat_ws(',', step, EXTRACT(EPOCH FROM "createdAt")::float8, ${fields}), ';' ORDER BY step) AS packed
FROM "Step" WHERE "runId" = $1 AND step > $2`,
    runId,
    after,
  );
  const step: number[] = [];
  const at: number[] = [];
  const cols = Object.fromEntries(names.map((k) => [k, []])) as unknown as Record<StepField, Col>;
  const packed = rows[0]?.packed;
  if (packed) {
    for (const record of packed.split(";")) {
      const f = record.split(",");
      step.push(Number(f[0]));
      at.push(Number(f[1]));
      for (let k = 0; k < names.length; k++) {
        const v = f[k + 2];
        cols[names[k]!].push(v === undefined || v === "" ? null : Number(v));
      }
    }
  }
  return { step, at, cols };
}

/** The most `metrics` keys charted (the first by name): a chart of more lines than this is unreadable anyway. */
const MAX_METRIC_KEYS = 40;

/**
 * Per step above `after` up to `upTo`, its train rollouts' aggregates as ingest keeps them (step-rollouts.ts):
 * reward min/max, mean completion length, sampled tokens and the mean of each `metrics` key — one row per
 * step, not one per rollout. Packed into one string as loadSteps does; the keys are read first so each is a
 * plain column of the same scan.
 */
async function loadRolloutColumns(db: DbOrTx, runId: string, after: number, upTo: number) {
  const keyRows = await db.$queryRaw<{ key: string }[]>`
    SELECT DISTINCT jsonb_object_keys("metricMeans") AS key FROM "StepRollouts"
    WHERE "runId" = ${runId} AND "step" > ${after} AND "step" <= ${upTo}`;
  const keys = keyRows.map((r) => r.key).sort((a, b) => a.localeCompare(b)).slice(0, MAX_METRIC_KEYS);
  const cols = ['"rewardMin"::text', '"rewardMax"::text', '"completionMean"::text', '"sampledTokens"::text', ...keys.map((_, i) => `"metricMeans"->>($${i + 4}::text)`)];
  const rows = await db.$queryRawUnsafe<{ packed: string | null }[]>(
    `SELECT string_agg(concat_ws(',', "step", ${cols.map((c) => `coalesce(${c}, '')`).join(", ")}), ';' ORDER BY "step") AS packed
FROM "StepRollouts" WHERE "runId" = $1 AND "step" > $2 AND "step" <= $3`,
    runId,
    after,
    upTo,
    ...keys,
  );
  const num = (v: string | undefined) => (v === undefined || v === "" ? null : Number(v));
  const aggs: { step: number; reward_min: number | null; reward_max: number | null; completion: number | null; tokens: number | null }[] = [];
  const means: { step: number; key: string; mean: number }[] = [];
  for (const record of rows[0]?.packed?.split(";") ?? []) {
    const f = record.split(",");
    const step = Number(f[0]);
    aggs.push({ step, reward_min: num(f[1]), reward_max: num(f[2]), completion: num(f[3]), tokens: num(f[4]) });
    keys.forEach((key, i) => {
      const mean = num(f[5 + i]);
      if (mean !== null) means.push({ step, key, mean });
    });
  }
  return { aggs, means };
}

/** The run's columns, every stored step; reads only what is newer than the cached copy. */
export async function runColumns(db: DbOrTx, runId: string): Promise<RunColumns> {
  const held = cache.get(runId) ?? empty();
  const before = held.step.length;
  const after = before ? held.step[before - 1]! : -1;
  const fresh = await loadSteps(db, runId, after);
  const added = fresh.step.length;
  if (added > 0) {
    const upTo = fresh.step[added - 1]!;
    const { aggs, means } = await loadRolloutColumns(db, runId, after, upTo);
    const next: RunColumns = {
      step: held.step.concat(fresh.step),
      at: held.at.concat(fresh.at),
      cols: Object.fromEntries(Object.entries(held.cols).map(([k, c]) => [k, c.concat(fresh.cols[k as StepField])])) as Record<StepField, Col>,
      rewardMin: held.rewardMin.concat(new Array<null>(added).fill(null)),
      rewardMax: held.rewardMax.concat(new Array<null>(added).fill(null)),
      completion: held.completion.concat(new Array<null>(added).fill(null)),
      sampled: held.sampled.concat(new Array<number>(added).fill(0)),
      metricMeans: new Map([...held.metricMeans].map(([k, c]) => [k, c.concat(new Array<null>(added).fill(null))])),
    };
    const rowOf = new Map<number, number>();
    fresh.step.forEach((s, i) => rowOf.set(s, before + i));
    for (const a of aggs) {
      const i = rowOf.get(a.step);
      if (i === undefined) continue; // a skipped step number without a Step row
      next.rewardMin[i] = a.reward_min;
      next.rewardMax[i] = a.reward_max;
      next.completion[i] = a.completion;
      next.sampled[i] = Number(a.tokens ?? 0);
    }
    for (const m of means) {
      const i = rowOf.get(m.step);
      if (i === undefined) continue;
      if (!next.metricMeans.has(m.key)) next.metricMeans.set(m.key, new Array<null>(next.step.length).fill(null));
      next.metricMeans.get(m.key)![i] = m.mean;
    }
    next.metricMeans = new Map([...next.metricMeans].sort(([a], [b]) => a.localeCompare(b)));
    cache.delete(runId);
    cache.set(runId, next);
    if (cache.size > MAX_RUNS) cache.delete(cache.keys().next().value!);
    return next;
  }
  // Most recently used last, so the least recently used run is dropped first.
  cache.delete(runId);
  cache.set(runId, held);
  return held;
}

/** Drops a run's cached columns (tests, and a run whose rows were rewritten). */
export function forgetRunColumns(runId: string): void {
  cache.delete(runId);
}
