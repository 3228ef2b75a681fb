"use client";
/**
 * Overlaid training curves: one chart per picked metric, one line per run in the run's color. Any numeric
 * field of the step metrics (trainer ones as `trainer.loss`) or of the evals (`eval.reward_mean`) can be
 * picked; each chart has its own picker, as W&B's panels do.
 */
import { useMemo, useState } from "react";
import type { EvalMetrics, StepMetrics } from "@contracts";
import { UplotChart } from "@/components/charts/uplot-chart";
import { fmtAxisTick } from "@/components/ui/format";
import { runColor } from "./colors";

export interface ChartRun {
  id: string;
  number: number;
  steps: readonly StepMetrics[];
  evals: readonly EvalMetrics[];
}

type Series = Map<string, Map<number, number>>; // metric → step → value, for one run

const DEFAULT_METRICS = ["reward_mean", "eval.reward_mean", "trainer.loss", "trainer.kl"];
const stepTick = (v: number) => (Number.isInteger(v) ? String(v) : "");

/** Every finite number in a record, by dotted path (one level of nesting: `trainer.loss`). */
function numericFields(rec: object, prefix: string, out: [string, number][] = []): [string, number][] {
  for (const [k, v] of Object.entries(rec)) {
    if (k === "step") continue;
    if (typeof v === "number" && Number.isFinite(v)) out.push([prefix + k, v]);
    else if (v && typeof v === "object" && !Array.isArray(v) && !prefix) numericFields(v as object, `${k}.`, out);
  }
  return out;
}

function seriesOf(run: ChartRun): Series {
  const series: Series = new Map();
  const put = (metric: string, step: number, v: number) => {
    if (!series.has(metric)) series.set(metric, new Map());
    series.get(metric)!.set(step, v);
  };
  for (const s of run.steps) for (const [k, v] of numericFields(s, "")) put(k, s.step, v);
  for (const e of run.evals) for (const [k, v] of numericFields(e, "")) put(`eval.${k}`, e.step, v);
  return series;
}

export function MetricCharts({ runs }: { runs: readonly ChartRun[] }) {
  const perRun = useMemo(() => runs.map(seriesOf), [runs]);
  const metrics = useMemo(() => [...new Set(perRun.flatMap((s) => [...s.keys()]))].sort(), [perRun]);
  const defaults = DEFAULT_METRICS.filter((m) => metrics.includes(m));
  const initial = defaults.length ? defaults : metrics.slice(0, 4);
  const [picked, setPicked] = useState<string[] | null>(null);
  const shown = picked ?? initial;

  if (metrics.length === 0) {
    return <div className="text-[12px] text-zinc-500">None of these runs has finished a step yet: no curves to overlay.</div>;
  }
  return (
    <div className="grid grid-cols-1 gap-2 lg:grid-cols-2">
      {shown.map((metric, i) => (
        <MetricChart
          key={i}
          metric={metric}
          metrics={metrics}
          runs={runs}
          perRun={perRun}
          onPick={(m) => setPicked(shown.map((x, j) => (j === i ? m : x)))}
          onRemove={shown.length > 1 ? () => setPicked(shown.filter((_, j) => j !== i)) : undefined}
        />
      ))}
      <button
        type="button"
        onClick={() => setPicked([...shown, metrics.find((m) => !shown.includes(m)) ?? metrics[0]!])}
        className="grid min-h-24 place-items-center rounded border border-dashed border-zinc-800 text-[12px] text-zinc-500 hover:border-zinc-600 hover:text-zinc-300"
      >
        + add a chart
      </button>
    </div>
  );
}

function MetricChart(props: {
  metric: string;
  metrics: readonly string[];
  runs: readonly ChartRun[];
  perRun: readonly Series[];
  onPick: (metric: string) => void;
  onRemove?: () => void;
}) {
  const { metric, metrics, runs, perRun, onPick, onRemove } = props;
  // The union of the runs' steps as x, one column per run (null where a run has no value: the line spans it).
  const { x, lines } = useMemo(() => {
    const steps = new Set<number>();
    for (const s of perRun) for (const step of s.get(metric)?.keys() ?? []) steps.add(step);
    const xs = [...steps].sort((a, b) => a - b);
    return {
      x: xs,
      lines: runs.map((r, i) => ({ label: `#${r.number}`, color: runColor(i), values: xs.map((step) => perRun[i]!.get(metric)?.get(step) ?? null) })),
    };
  }, [metric, perRun, runs]);

  return (
    <div className="flex min-w-0 flex-col rounded border border-zinc-800 bg-zinc-900/40 p-2" data-testid="compare-chart">
      <div className="mb-1 flex items-center gap-2 px-1">
        <select
          aria-label="Metric"
          value={metric}
          onChange={(e) => onPick(e.target.value)}
          className="rounded border border-zinc-700 bg-zinc-900 px-1.5 py-0.5 font-mono text-[12px] text-zinc-200"
        >
          {metrics.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        {onRemove && (
          <button type="button" onClick={onRemove} className="ml-auto text-[12px] text-zinc-500 hover:text-zinc-300" aria-label={`Remove the ${metric} chart`}>
            ✕
          </button>
        )}
      </div>
      {x.length === 0 ? (
        <div className="grid h-44 place-items-center text-[12px] text-zinc-600">no run has {metric}</div>
      ) : (
        <UplotChart x={x} lines={lines} smoothing={0} syncKey="compare" xLabel="step" formatX={stepTick} formatY={fmtAxisTick} height={150} />
      )}
    </div>
  );
}
