"use client";
/**
 * Training curves by step, redrawn as step.finished / eval.finished events arrive: reward mean with a
 * ±std band (std within groups), loss, KL, and eval reward (±std over the validation rollouts).
 */
import { Area, CartesianGrid, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { EvalMetrics, StepMetrics } from "@contracts";
import { fmtAxisTick, fmtNum } from "../ui/format";

interface Point {
  step: number;
  value: number | null;
  band?: [number, number] | null;
}

const AXIS = { stroke: "#52525b", fontSize: 11, tickLine: false } as const;

function ChartCard({ title, data, color, latest, empty }: { title: string; data: Point[]; color: string; latest: string; empty: string }) {
  const hasBand = data.some((d) => d.band);
  return (
    <div className="flex min-w-0 flex-col rounded border border-zinc-800 bg-zinc-900/40 p-2" data-testid="chart">
      <div className="mb-1 flex items-baseline justify-between px-1">
        <span className="text-[11px] tracking-wide text-zinc-400 uppercase">{title}</span>
        <span className="font-mono text-[12px] text-zinc-200 tabular-nums">{latest}</span>
      </div>
      <div className="h-32">
        {data.length === 0 ? (
          <div className="grid h-full place-items-center text-[12px] text-zinc-600">{empty}</div>
        ) : (
          <ResponsiveContainer width="100%" height="100%">
            <ComposedChart data={data} margin={{ top: 4, right: 8, bottom: 0, left: 0 }}>
              <CartesianGrid stroke="#27272a" vertical={false} />
              <XAxis dataKey="step" type="number" domain={["dataMin", "dataMax"]} allowDecimals={false} {...AXIS} />
              <YAxis domain={["auto", "auto"]} tickCount={4} width={50} tickFormatter={fmtAxisTick} {...AXIS} />
              <Tooltip
                contentStyle={{ background: "#18181b", border: "1px solid #3f3f46", fontSize: 12 }}
                labelFormatter={(s) => `step ${String(s)}`}
                formatter={(v) => (Array.isArray(v) ? `${fmtNum(Number(v[0]))} – ${fmtNum(Number(v[1]))}` : fmtNum(Number(v), 4))}
              />
              {hasBand && (
                <Area dataKey="band" name="±std" stroke="none" fill={color} fillOpacity={0.15} isAnimationActive={false} connectNulls />
              )}
              <Line
                dataKey="value"
                name={title}
                stroke={color}
                strokeWidth={1.75}
                dot={data.length < 30 ? { r: 2, fill: color } : false}
                isAnimationActive={false}
                connectNulls
              />
            </ComposedChart>
          </ResponsiveContainer>
        )}
      </div>
    </div>
  );
}

function last(points: Point[]): string {
  for (let i = points.length - 1; i >= 0; i--) {
    const v = points[i]!.value;
    if (v !== null) return fmtNum(v, 4);
  }
  return "—";
}

const band = (mean: number | null, std: number | null): [number, number] | null =>
  mean === null || std === null ? null : [mean - std, mean + std];

export function RunCharts({ steps, evals }: { steps: readonly StepMetrics[]; evals: readonly EvalMetrics[] }) {
  const reward: Point[] = steps.map((s) => ({ step: s.step, value: s.reward_mean, band: band(s.reward_mean, s.reward_std_within_group) }));
  const trained = steps.filter((s) => s.trainer);
  const loss: Point[] = trained.map((s) => ({ step: s.step, value: s.trainer!.loss }));
  const kl: Point[] = trained.map((s) => ({ step: s.step, value: s.trainer!.kl }));
  const evalPts: Point[] = evals.map((e) => ({ step: e.step, value: e.reward_mean, band: band(e.reward_mean, e.reward_std) }));
  return (
    <div className="grid grid-cols-1 gap-2 md:grid-cols-2 xl:grid-cols-4">
      <ChartCard title="Reward mean" data={reward} color="#fbbf24" latest={last(reward)} empty="waiting for the first step" />
      <ChartCard title="Loss" data={loss} color="#a78bfa" latest={last(loss)} empty="no training step yet" />
      <ChartCard title="KL" data={kl} color="#38bdf8" latest={last(kl)} empty="no training step yet" />
      <ChartCard title="Eval reward" data={evalPts} color="#34d399" latest={last(evalPts)} empty="no eval yet" />
    </div>
  );
}
