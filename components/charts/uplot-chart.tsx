"use client";
/**
 * One line chart on uPlot: lines (raw faint + debiased-EMA smoothed when smoothing > 0), filled bands
 * between two series (±std, min/max), uPlot's live legend (values at the cursor; click a name to hide it)
 * and a cursor synced with every chart of the same syncKey.
 *
 * Why uPlot (1.6, MIT, ~50 KB, no dependencies): it draws on one canvas from flat typed columns and was
 * built for 100k+ points per series (Grafana's time series panel uses it); 100,000 points draw in a few tens
 * of ms (docs/benchmarks.md, "Charts"). recharts renders an SVG element per point through React and takes
 * seconds at that size; ECharts is canvas too but ~1 MB and an option-object API larger than we need.
 */
import { useEffect, useMemo, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { debiasedEma } from "./ema";
import { tickLabels } from "./ticks";
import { CHART_SCALES } from "./chart-range";

export interface ChartLine {
  label: string;
  color: string;
  values: readonly (number | null)[];
}

export interface ChartBand {
  label: string;
  /** The edges' names in the legend. */
  loLabel: string;
  hiLabel: string;
  color: string;
  lo: readonly (number | null)[];
  hi: readonly (number | null)[];
}

export interface UplotChartProps {
  x: readonly number[];
  lines: readonly ChartLine[];
  bands?: readonly ChartBand[];
  /** EMA weight in [0, 1): 0 draws the raw lines only. */
  smoothing: number;
  syncKey: string;
  /** The x column's name in the legend. */
  xLabel?: string;
  formatX: (v: number) => string;
  formatY: (v: number) => string;
  height: number;
  /** Called with the ms from having the data to uPlot's first draw (benchmarks, data-drawn-ms). */
  onDrawn?: (ms: number) => void;
}

const AXIS = { stroke: "#71717a", grid: { stroke: "#27272a", width: 1 }, ticks: { stroke: "#3f3f46", width: 1 }, font: "11px ui-sans-serif, system-ui" };

/** `#rrggbb` at an alpha, for fills and the faint raw line under a smoothed one. */
export function withAlpha(hex: string, alpha: number): string {
  const a = Math.round(Math.max(0, Math.min(1, alpha)) * 255)
    .toString(16)
    .padStart(2, "0");
  return `${hex}${a}`;
}

/** The uPlot series and data columns for the lines and bands (band edges are invisible series). */
function build(props: UplotChartProps): { series: uPlot.Series[]; data: uPlot.AlignedData; bands: uPlot.Band[]; hideInLegend: number[] } {
  const { x, lines, bands = [], smoothing } = props;
  const series: uPlot.Series[] = [{ label: props.xLabel ?? "x", value: (_u, v) => (v == null ? "—" : props.formatX(v)) }];
  const data: (readonly (number | null)[])[] = [x];
  // The legend's values at the cursor: 4 significant digits (the axis ticks are shorter).
  const value = (_u: uPlot, v: number | null) => (v == null ? "—" : String(Number(v.toPrecision(4))));
  const uBands: uPlot.Band[] = [];
  const hideInLegend: number[] = [];
  for (const b of bands) {
    const hi = series.length;
    series.push({ label: b.hiLabel, stroke: withAlpha(b.color, 0.35), width: 0.5, points: { show: false }, value, spanGaps: true });
    data.push(b.hi);
    series.push({ label: b.loLabel, stroke: withAlpha(b.color, 0.35), width: 0.5, points: { show: false }, value, spanGaps: true });
    data.push(b.lo);
    uBands.push({ series: [hi, hi + 1], fill: withAlpha(b.color, b.label === "min/max" ? 0.08 : 0.18) });
  }
  const dots = x.length < 30;
  for (const l of lines) {
    if (smoothing > 0) {
      // The raw line stays, faint, as in W&B and TensorBoard; the legend shows the smoothed value only.
      hideInLegend.push(series.length);
      series.push({ label: `${l.label} (raw)`, stroke: withAlpha(l.color, 0.3), width: 1, points: { show: false }, value, spanGaps: true });
      data.push(l.values);
      series.push({ label: l.label, stroke: l.color, width: 1.75, points: { show: dots, size: 4 }, value, spanGaps: true });
      data.push(debiasedEma(l.values, smoothing));
    } else {
      series.push({ label: l.label, stroke: l.color, width: 1.75, points: { show: dots, size: 4 }, value, spanGaps: true });
      data.push(l.values);
    }
  }
  return { series, data: data as uPlot.AlignedData, bands: uBands, hideInLegend };
}

export function UplotChart(props: UplotChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const { x, lines, bands, smoothing, syncKey, xLabel, height, formatX, formatY, onDrawn } = props;
  const built = useMemo(
    () => build({ x, lines, bands, smoothing, syncKey, xLabel, height, formatX, formatY }),
    [x, lines, bands, smoothing, syncKey, xLabel, height, formatX, formatY],
  );
  const shape = built.series.map((s) => `${s.label}|${String(s.stroke)}`).join(",");

  // (Re)create the plot when its series change; new data of the same shape goes through setData.
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const started = performance.now();
    let first = true;
    const opts: uPlot.Options = {
      width: Math.max(100, el.clientWidth),
      height,
      series: built.series,
      bands: built.bands,
      // From the data (y-range.ts: uPlot's default makes a flat 0 a 0–100 axis), never a range whose ends
      // meet (chart-range.ts: a series flat up to float noise made uPlot throw).
      scales: CHART_SCALES,
      axes: [
        { ...AXIS, values: (_u, ticks) => tickLabels(ticks, formatX), size: 28 },
        { ...AXIS, values: (_u, ticks) => tickLabels(ticks, formatY), size: 52 },
      ],
      cursor: { sync: { key: syncKey, setSeries: false }, points: { size: 6 } },
      legend: { live: true },
      hooks: {
        draw: [
          () => {
            if (!first) return;
            first = false;
            onDrawn?.(performance.now() - started);
          },
        ],
      },
    };
    const u = new uPlot(opts, built.data, el);
    const rows = u.root.querySelectorAll<HTMLElement>(".u-legend .u-series");
    for (const i of built.hideInLegend) if (rows[i]) rows[i].style.display = "none";
    plot.current = u;
    const ro = new ResizeObserver(() => u.setSize({ width: Math.max(100, el.clientWidth), height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // built.data is applied by the effect below; recreating on every data change would drop the cursor.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [shape, syncKey, height, formatX, formatY]);

  useEffect(() => {
    plot.current?.setData(built.data);
  }, [built.data]);

  return <div ref={box} className="uplot-dark min-w-0" />;
}
