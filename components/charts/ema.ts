/**
 * Debiased exponential moving average, as TensorBoard's and W&B's smoothing slider: each value is
 * last = last · w + (1 − w) · v, divided by (1 − w^k) after k values so the start is not pulled toward 0.
 * Missing values (null, NaN) stay missing and do not advance the average. w = 0 returns the values as they are.
 *
 * It smooths the points drawn: for a long run those are the server's M4 picks (first/last/min/max per pixel
 * column), as TensorBoard smooths its downsampled points; a run shorter than the chart's width is exact.
 */
export function debiasedEma(values: readonly (number | null)[], weight: number): (number | null)[] {
  if (!(weight >= 0 && weight < 1)) throw new RangeError(`smoothing weight must be in [0, 1), got ${weight}`);
  if (weight === 0) return [...values];
  let last = 0;
  let k = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    k++;
    last = last * weight + (1 - weight) * v;
    return last / (1 - weight ** k);
  });
}
