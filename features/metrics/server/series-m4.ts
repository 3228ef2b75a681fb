/**
 * M4 aggregation (Jugel et al., "M4: A Visualization-Oriented Time Series Data Aggregation", VLDB 2014):
 * split the x range into one bucket per pixel column and keep, per bucket, the first and last point and the
 * points with the smallest and largest value. A line drawn through those is pixel-identical to the line
 * through every point, while min/max alone loses where the line enters and leaves each column. So a
 * 100,000-point series reaches the browser as at most 4 × width points and still shows every spike.
 *
 * Pure functions over arrays (unit tested in series-m4.test.ts). They run in TypeScript, not SQL: a chart
 * shares one x array across its series (the reward mean and its two bands), so the points kept are the
 * union of each series' picks, which plain GROUP BY cannot express without a sort per series per bucket.
 */

/** Bucket of x in [lo, hi] split into `width` equal columns (the last column includes hi). */
function bucketOf(x: number, lo: number, span: number, width: number): number {
  if (span <= 0) return 0;
  return Math.min(width - 1, Math.floor(((x - lo) / span) * width));
}

/**
 * Indices (ascending) of the points M4 keeps of one series: per bucket the first and last non-null value
 * and the smallest and largest. xs must be ascending. Nulls (no value at that x) are skipped. A series of
 * at most `width` points is returned whole (exact); a longer one as at most 4 points per bucket.
 */
export function m4Indices(xs: ArrayLike<number>, ys: ArrayLike<number | null>, width: number): number[] {
  const n = xs.length;
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width must be a positive integer, got ${width}`);
  if (n <= width) {
    const all: number[] = [];
    for (let i = 0; i < n; i++) if (isNum(ys[i])) all.push(i);
    return all;
  }
  const lo = xs[0]!;
  const span = xs[n - 1]! - lo;
  const out: number[] = [];
  let bucket = -1;
  let first = -1;
  let last = -1;
  let min = -1;
  let max = -1;
  const flush = () => {
    if (first < 0) return;
    // The four picks in x order, without repeats (a bucket of one point is one point).
    const picks = [first, min, max, last].sort((a, b) => a - b);
    for (let k = 0; k < picks.length; k++) if (k === 0 || picks[k] !== picks[k - 1]) out.push(picks[k]!);
  };
  for (let i = 0; i < n; i++) {
    const y = ys[i];
    if (!isNum(y)) continue;
    const b = bucketOf(xs[i]!, lo, span, width);
    if (b !== bucket) {
      flush();
      bucket = b;
      first = last = min = max = i;
      continue;
    }
    last = i;
    if (y < (ys[min] as number)) min = i;
    if (y > (ys[max] as number)) max = i;
  }
  flush();
  return out;
}

/** The union (ascending, no repeats) of several series' M4 picks over the same xs: one chart's shared x. */
export function m4UnionIndices(xs: ArrayLike<number>, series: readonly ArrayLike<number | null>[], width: number): number[] {
  if (series.length === 1) return m4Indices(xs, series[0]!, width);
  const keep = new Uint8Array(xs.length);
  for (const ys of series) for (const i of m4Indices(xs, ys, width)) keep[i] = 1;
  const out: number[] = [];
  for (let i = 0; i < keep.length; i++) if (keep[i]) out.push(i);
  return out;
}

function isNum(v: number | null | undefined): v is number {
  return typeof v === "number" && Number.isFinite(v);
}
