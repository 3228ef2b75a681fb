"use client";
/**
 * A train run's curves (runs.series, bucketed on the server to each chart's pixel width): reward mean with
 * ±std and min/max bands, each reward component / ctx.metric, exception rate, loss, KL, entropy, grad norm,
 * probs_corr, completion length, tokens/s, step time split and eval reward; x by step, wall time or sampled
 * tokens; an EMA smoothing slider (raw faint under smoothed); cursors synced across the charts.
 *
 * Live: each step.finished / eval.finished the stream delivers (seen) refetches the bucketed series, at
 * most once per REFRESH_MS. Refetching instead of appending the event's numbers client-side because the
 * bands, component means and token axis come from the step's trajectories, aggregated in SQL: one small
 * request (≤ 4 × width points per series) keeps a single definition of every curve.
 */
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { RouterOutputs } from "@/components/trpc";
import { useTRPC } from "@/components/trpc";
import { UplotChart, type ChartBand, type ChartLine } from "@/components/charts/uplot-chart";
import { fmtAxisTick, fmtNum, fmtSignal } from "@/components/ui/format";
import { SIGNALS } from "@contracts";

type RunSeries = RouterOutputs["runs"]["series"];
type SeriesChart = RunSeries["charts"][number];
type XMode = RunSeries["x"];

const REFRESH_MS = 2_000;
// Short enough that a row of charts leaves the rollout and group panels most of a 900 px screen.
const HEIGHT = 110;
const PALETTE = ["#f472b6", "#34d399", "#60a5fa", "#fbbf24", "#a78bfa", "#fb923c", "#2dd4bf", "#e879f9"];

const col = (c: SeriesChart, key: string) => c.series.find((s) => s.key === key)?.values ?? [];

interface ChartDef {
  title: string;
  /** What the number is (contracts/signals.ts where it is one of the shared signals). */
  hint?: string;
  empty: string;
  lines: (c: SeriesChart) => ChartLine[];
  bands?: (c: SeriesChart) => ChartBand[];
}

const single = (title: string, key: string, color: string, empty = "waiting for the first step"): ChartDef => ({
  title,
  empty,
  lines: (c) => [{ label: title, color, values: col(c, key) }],
});
const NO_TRAIN = "no training step yet";

const DEFS: Record<SeriesChart["id"], ChartDef> = {
  reward: {
    title: "Reward",
    empty: "waiting for the first step",
    lines: (c) => [{ label: "mean", color: "#fbbf24", values: col(c, "mean") }],
    bands: (c) => [
      { label: "min/max", loLabel: "min", hiLabel: "max", color: "#fbbf24", lo: col(c, "min"), hi: col(c, "max") },
      { label: "±std", loLabel: "−std", hiLabel: "+std", color: "#fbbf24", lo: col(c, "std_lo"), hi: col(c, "std_hi") },
    ],
  },
  components: {
    title: "Reward components · ctx.metric",
    empty: "no metrics recorded on the rollouts",
    lines: (c) => c.series.map((s, i) => ({ label: s.key, color: PALETTE[i % PALETTE.length]!, values: s.values })),
  },
  exception_rate: single("Exception rate", "exception_rate", "#f87171"),
  loss: { ...single("Loss", "loss", "#a78bfa", NO_TRAIN), hint: SIGNALS.loss.definition },
  kl: { ...single("KL", "kl", "#38bdf8", NO_TRAIN), hint: SIGNALS.kl.definition },
  entropy: single("Entropy", "entropy", "#f472b6", NO_TRAIN),
  grad_norm: single("Grad norm", "grad_norm", "#fb923c", NO_TRAIN),
  probs_corr: single("probs_corr", "probs_corr", "#2dd4bf", NO_TRAIN),
  completion_tokens: single("Completion length (tokens)", "completion_tokens", "#c084fc"),
  tokens_per_s: single("Tokens / s", "tokens_per_s", "#60a5fa"),
  step_time: {
    title: "Step time (s)",
    empty: "waiting for the first step",
    lines: (c) => [
      { label: "rollout", color: "#60a5fa", values: col(c, "rollout") },
      { label: "train", color: "#a78bfa", values: col(c, "train") },
      { label: "checkpoint", color: "#fbbf24", values: col(c, "checkpoint") },
      { label: "idle", color: "#71717a", values: col(c, "idle") },
    ],
  },
  eval_reward: {
    title: "Eval reward",
    empty: "no eval yet",
    lines: (c) => [{ label: "mean", color: "#34d399", values: col(c, "mean") }],
    bands: (c) => [{ label: "±std", loLabel: "−std", hiLabel: "+std", color: "#34d399", lo: col(c, "std_lo"), hi: col(c, "std_hi") }],
  },
};

const X_LABEL: Record<XMode, string> = { step: "step", time: "wall time", tokens: "tokens" };

function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e9) return `${Number((v / 1e9).toPrecision(3))}G`;
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e3) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Math.round(v));
}

function clock(seconds: number): string {
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = s % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, "0")}` : m > 0 ? `${m}m${String(ss).padStart(2, "0")}` : `${ss}s`;
}

const X_FORMAT: Record<XMode, (v: number) => string> = {
  step: (v) => (Number.isInteger(v) ? String(v) : ""),
  time: clock,
  tokens: compact,
};

function lastValue(values: readonly (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] != null) return values[i]!;
  return null;
}

/** Chart column width in px, rounded so resizing a little does not refetch. */
function useColumnWidth(): [React.RefObject<HTMLDivElement | null>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      const card = el.firstElementChild as HTMLElement | null;
      const w = (card?.clientWidth ?? el.clientWidth) - 16;
      setWidth(Math.max(64, Math.round(w / 50) * 50));
    };
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

const COLLAPSED_KEY = "rollbook.runCharts.collapsed";

export function RunCharts({
  runId,
  seen,
  klMeasured = true,
}: {
  runId: string;
  /** step + eval events the stream has delivered */
  seen: number;
  /** The run's trainer.beta > 0: without a KL term the trainer does not compute KL and reports 0. */
  klMeasured?: boolean;
}) {
  const trpc = useTRPC();
  // Folded charts leave the rollout and group panels the screen (issue 31: at 1440×900 the charts took two thirds).
  const [collapsed, setCollapsed] = useState(false);
  useEffect(() => setCollapsed(window.localStorage.getItem(COLLAPSED_KEY) === "1"), []);
  const toggle = () =>
    setCollapsed((c) => {
      window.localStorage.setItem(COLLAPSED_KEY, c ? "0" : "1");
      return !c;
    });
  const [x, setX] = useState<XMode>("step");
  const [smoothing, setSmoothing] = useState(0);
  const [gridRef, width] = useColumnWidth();
  const series = useQuery(
    trpc.runs.series.queryOptions({ runId, x, width: Math.max(16, width) }, { enabled: width > 0, placeholderData: keepPreviousData }),
  );
  const { refetch, dataUpdatedAt } = series;

  // Throttled live refresh: at most one refetch per REFRESH_MS, the last event always caught up.
  useEffect(() => {
    if (seen === 0) return;
    const timer = setTimeout(() => void refetch(), Math.max(0, dataUpdatedAt + REFRESH_MS - Date.now()));
    return () => clearTimeout(timer);
    // dataUpdatedAt is read at the event, not a trigger: a refetch must not schedule another.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [seen, refetch]);

  const charts = series.data?.charts ?? [];
  return (
    <div>
      <div className="mb-1.5 flex flex-wrap items-center gap-3 text-[12px] text-zinc-400">
        <button
          type="button"
          data-testid="charts-toggle"
          aria-expanded={!collapsed}
          onClick={toggle}
          className="rounded px-1.5 py-0.5 text-zinc-300 hover:bg-zinc-800"
          title={collapsed ? "Show the charts" : "Fold the charts away: more room for rollouts and groups"}
        >
          {collapsed ? "▸ Charts" : "▾ Charts"}
        </button>
        <span className="flex items-center gap-1" role="group" aria-label="x axis">
          x:
          {(["step", "time", "tokens"] as const).map((m) => (
            <button
              key={m}
              type="button"
              aria-pressed={x === m}
              onClick={() => setX(m)}
              className={`rounded px-1.5 py-0.5 ${x === m ? "bg-zinc-700 text-zinc-100" : "text-zinc-400 hover:text-zinc-200"}`}
              title={m === "tokens" ? "cumulative prompt + completion tokens of the train rollouts" : m === "time" ? "wall time since the run started" : undefined}
            >
              {X_LABEL[m]}
            </button>
          ))}
        </span>
        <label className="flex items-center gap-1.5" title="debiased exponential moving average (raw values stay, faint)">
          smoothing
          <input
            type="range"
            aria-label="Smoothing"
            min={0}
            max={0.99}
            step={0.01}
            value={smoothing}
            onChange={(e) => setSmoothing(Number(e.target.value))}
            className="w-28 accent-zinc-400"
          />
          <span className="w-8 font-mono text-zinc-300 tabular-nums">{smoothing.toFixed(2)}</span>
        </label>
        {series.error && <span className="text-red-300">Charts could not be loaded: {series.error.message}</span>}
        {series.isFetching && <span className="text-zinc-600">updating…</span>}
        {series.data && series.data.steps > width && (
          <span className="ml-auto text-zinc-600" title="M4: each pixel column keeps its first, last, min and max point">
            {series.data.steps.toLocaleString("en-US")} steps, bucketed to {width} px
          </span>
        )}
      </div>
      {/* At most about a third of the window, scrolling (or folded): the rollouts below keep the rest. */}
      <div
        ref={gridRef}
        hidden={collapsed}
        className="grid max-h-[26vh] grid-cols-1 gap-2 overflow-y-auto md:grid-cols-2 xl:grid-cols-3 2xl:grid-cols-4"
        data-testid="run-charts"
      >
        {(series.data ? charts : PLACEHOLDER).map((c) => (
          <ChartCard
            key={c.id}
            chart={c}
            xMode={x}
            smoothing={smoothing}
            syncKey={`run-${runId}-${x}`}
            loading={!series.data}
            note={c.id === "kl" && !klMeasured ? "not measured: trainer.beta is 0" : undefined}
          />
        ))}
      </div>
    </div>
  );
}

const PLACEHOLDER: SeriesChart[] = (["reward", "loss", "kl"] as const).map((id) => ({ id, x: [], series: [], total: 0 }));

function ChartCard({
  chart,
  xMode,
  smoothing,
  syncKey,
  loading,
  note,
}: {
  chart: SeriesChart;
  xMode: XMode;
  smoothing: number;
  syncKey: string;
  loading: boolean;
  /** Said instead of the curve: the number is not a measurement (KL without a KL term). */
  note?: string;
}) {
  const def = DEFS[chart.id];
  const lines = useMemo(() => def.lines(chart), [def, chart]);
  const bands = useMemo(() => def.bands?.(chart), [def, chart]);
  const [drawnMs, setDrawnMs] = useState<number | null>(null);
  const onDrawn = useCallback((ms: number) => setDrawnMs(ms), []);
  const latest = lines.length === 1 ? lastValue(lines[0]!.values) : null;
  const hasPoints = note === undefined && chart.x.length > 0 && lines.some((l) => l.values.some((v) => v != null));
  return (
    <div
      className="flex min-w-0 flex-col rounded border border-zinc-800 bg-zinc-900/40 p-2"
      data-testid="chart"
      data-chart-id={chart.id}
      data-points={chart.x.length}
      data-drawn-ms={drawnMs === null ? undefined : drawnMs.toFixed(1)}
    >
      <div className="mb-1 flex items-baseline justify-between px-1">
        <span className="text-[11px] tracking-wide text-zinc-400 uppercase" title={def.hint}>
          {def.title}
        </span>
        <span className="font-mono text-[12px] text-zinc-200 tabular-nums">{latest === null || note !== undefined ? "" : chart.id === "loss" || chart.id === "kl" ? fmtSignal(latest) : fmtNum(latest, 4)}</span>
      </div>
      {hasPoints ? (
        <UplotChart
          x={chart.x}
          lines={lines}
          bands={bands}
          smoothing={smoothing}
          syncKey={syncKey}
          xLabel={X_LABEL[xMode]}
          formatX={X_FORMAT[xMode]}
          formatY={fmtAxisTick}
          height={HEIGHT}
          onDrawn={onDrawn}
        />
      ) : (
        <div className="grid place-items-center text-[12px] text-zinc-600" style={{ height: HEIGHT }}>
          {loading ? "loading…" : (note ?? def.empty)}
        </div>
      )}
    </div>
  );
}
