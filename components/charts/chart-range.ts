/**
 * The charts' scale ranges: uPlot's own auto-range, except where it collapses to nothing.
 *
 * Why (issue 31, "RangeError: Invalid array length" on live run pages): a series that is flat up to float
 * noise — probs_corr of a step whose sampler and trainer agree, 0.99999976 … 1.00000024 — makes uPlot
 * 1.6.32's auto-range return [1, 1] (its padding rounds both ends to the same value). Its tick loop then
 * never passes the top of the scale and pushes ticks until V8 refuses the array: the throw comes from
 * uPlot's commit, outside React, once per chart drawn (leeoniya/uPlot#1084, closed as the caller's to
 * handle). So a range whose ends are not apart is not handed to uPlot: the data is drawn as what it is, a
 * flat line, on the range uPlot itself gives a flat series (its value ± its size; 0 … 100 at 0).
 */
import uPlot from "uplot";
import { yRange as dataRange } from "./y-range";

/** uPlot's default padding of an auto-ranged numeric y scale (its `rangePad`), with soft 0. */
const PAD = 0.1;

/** Ends this close (relative to their size) draw no usable axis: uPlot's ticks and its rounding meet there. */
const MIN_RELATIVE_SPAN = 1e-9;

type Range = [number | null, number | null];

function usable(lo: number, hi: number): boolean {
  return Number.isFinite(lo) && Number.isFinite(hi) && hi - lo > Math.max(Math.abs(lo), Math.abs(hi)) * MIN_RELATIVE_SPAN;
}

/** A flat series' range: uPlot's own for a single value (the mean of the two ends). */
function flatRange(min: number, max: number): [number, number] {
  const mid = min + (max - min) / 2;
  const [lo, hi] = uPlot.rangeNum(mid, mid, PAD, true);
  return lo !== null && hi !== null && usable(lo, hi) ? [lo, hi] : [mid - 1, mid + 1];
}

/** The y scale: uPlot's auto-range (padded, soft at 0), or the flat range where that collapses. */
export function yRange(min: number | null, max: number | null): Range {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [null, null];
  const [lo, hi] = uPlot.rangeNum(min, max, PAD, true);
  return lo !== null && hi !== null && usable(lo, hi) ? [lo, hi] : flatRange(min, max);
}

/** The x scale: the data's own ends (uPlot's default for x), or the flat range where they are not apart. */
export function xRange(min: number | null, max: number | null): Range {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [null, null];
  return usable(min, max) ? [min, max] : flatRange(min, max);
}

/** The y scale the charts draw with: the data's own range (y-range.ts), or the flat range where its ends meet. */
export function chartYRange(min: number | null, max: number | null): Range {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [null, null];
  const [lo, hi] = dataRange(min, max);
  return usable(lo, hi) ? [lo, hi] : flatRange(min, max);
}

/** The scales every chart draws with (components/charts/uplot-chart.tsx). */
export const CHART_SCALES: uPlot.Scales = {
  x: { time: false, range: (_u, min, max) => xRange(min, max) as uPlot.Range.MinMax },
  y: { range: (_u, min, max) => chartYRange(min, max) as uPlot.Range.MinMax },
};
