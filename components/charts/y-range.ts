/**
 * The y range of a chart, from its data: uPlot's default turns a flat series of zeros into a 0–100 axis
 * (issue 31: KL at 0 on 0–100 read as "KL is small against something big"), and a loss of ~1e-6 needs an axis
 * of ~1e-6, not one that includes 0..1. So: the data's min..max with 5% padding; a flat series (or one flat
 * to float noise) is centred in a span of 10% of its value, at least ±MIN_HALF_SPAN around 0, so a flat line
 * reads as flat at its value.
 */
export const MIN_HALF_SPAN = 1e-3;
const PAD = 0.05;

export function yRange(min: number | null | undefined, max: number | null | undefined): [number, number] {
  const lo = typeof min === "number" && Number.isFinite(min) ? min : null;
  const hi = typeof max === "number" && Number.isFinite(max) ? max : null;
  if (lo === null || hi === null) return [0, 1];
  const span = hi - lo;
  const magnitude = Math.max(Math.abs(lo), Math.abs(hi));
  if (span <= magnitude * 1e-9 || span === 0) {
    const mid = (lo + hi) / 2;
    const half = Math.max(Math.abs(mid) * 0.1, magnitude === 0 ? MIN_HALF_SPAN : 0);
    return [mid - half, mid + half];
  }
  return [lo - span * PAD, hi + span * PAD];
}
