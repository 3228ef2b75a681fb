"use client";
/**
 * Per-task mean reward of every run and its change against the baseline, regressions first (Braintrust's
 * experiment diff). The server decides which rollouts stand for a task and sorts the rows; this shows them,
 * with a per-run tally of regressions / improvements. Tasks are user data: shown as JSON text.
 */
import { useState } from "react";
import type { RouterOutputs } from "@/components/trpc";
import { fmtNum, fmtSigned, truncate } from "@/components/ui/format";
import { runColor } from "./colors";

type Tasks = RouterOutputs["compare"]["runs"]["tasks"];

const PAGE = 100;
const EPSILON = 1e-9;

function deltaClass(d: number | null): string {
  if (d === null || Math.abs(d) <= EPSILON) return "text-zinc-500";
  return d < 0 ? "bg-red-950/50 text-red-300" : "bg-emerald-950/40 text-emerald-300";
}

function taskText(task: unknown): string {
  if (typeof task === "string") return task;
  return JSON.stringify(task) ?? String(task);
}

export function TaskDeltas(props: {
  split: Tasks["split"];
  rows: Tasks["rows"];
  summary: Tasks["summary"];
  runs: readonly { id: string; number: number }[];
  baselineRunId: string;
}) {
  const { split, rows, summary, runs, baselineRunId } = props;
  const [regressionsOnly, setRegressionsOnly] = useState(false);
  const [limit, setLimit] = useState(PAGE);
  const filtered = regressionsOnly ? rows.filter((r) => r.worstDelta !== null && r.worstDelta < -EPSILON) : rows;
  const shown = filtered.slice(0, limit);
  const baseIndex = runs.findIndex((r) => r.id === baselineRunId);

  if (rows.length === 0) {
    return <div className="text-[12px] text-zinc-500">No scored rollouts in these runs yet: nothing to compare per task.</div>;
  }
  return (
    <div>
      <div className="mb-2 flex flex-wrap items-center gap-x-5 gap-y-1 text-[12px] text-zinc-400">
        <span>
          {split === "val"
            ? "Validation rollouts at each run's newest eval step (every run has them)."
            : "Train rollouts at each run's newest step (not every run has validation rollouts)."}
        </span>
        <label className="flex items-center gap-1.5">
          <input type="checkbox" checked={regressionsOnly} onChange={(e) => setRegressionsOnly(e.target.checked)} />
          regressions only
        </label>
      </div>
      <div className="mb-2 flex flex-wrap gap-2" data-testid="task-summary">
        {summary.map((s) => {
          const i = runs.findIndex((r) => r.id === s.runId);
          return (
            <div key={s.runId} className="rounded border border-zinc-800 bg-zinc-900/40 px-2.5 py-1.5 text-[12px]">
              <span className="font-mono" style={{ color: runColor(i) }}>
                #{runs[i]?.number}
              </span>
              <span className="ml-2 text-zinc-500">
                {s.tasks} tasks{s.step !== null ? ` @ step ${s.step}` : ""}
              </span>
              {s.runId === baselineRunId ? (
                <span className="ml-2 text-zinc-400">baseline</span>
              ) : (
                <>
                  <span className="ml-2 text-red-300">{s.regressions} worse</span>
                  <span className="ml-2 text-emerald-300">{s.improvements} better</span>
                  <span className="ml-2 text-zinc-400">{s.unchanged} same</span>
                  {s.incomparable > 0 && <span className="ml-2 text-zinc-600" title="a task only one of the two runs has, or that neither could score">{s.incomparable} n/a</span>}
                </>
              )}
            </div>
          );
        })}
      </div>
      <div className="overflow-x-auto rounded border border-zinc-800">
        <table className="w-full text-left text-[12px]" data-testid="task-deltas">
          <thead className="bg-zinc-900 text-[11px] tracking-wide text-zinc-500">
            <tr>
              <th className="px-3 py-1.5 font-medium uppercase">task</th>
              {runs.map((r, i) => (
                <th key={r.id} className="px-3 py-1.5 text-right font-mono font-medium" style={{ color: runColor(i) }}>
                  #{r.number}
                  {i === baseIndex ? <span className="ml-1 text-zinc-500">(baseline)</span> : <span className="ml-1 text-zinc-500">Δ</span>}
                </th>
              ))}
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-800/80">
            {shown.map((row) => {
              const text = taskText(row.task);
              return (
                <tr key={row.taskIndex} data-testid="task-delta-row">
                  <td className="max-w-[28rem] px-3 py-1" title={text}>
                    <span className="mr-2 font-mono text-zinc-500">{split === "val" ? "val" : "train"}#{row.taskIndex}</span>
                    <span className="font-mono text-zinc-300">{truncate(text, 90)}</span>
                    {row.taskDiffers && (
                      <span className="ml-2 text-amber-400" title="Not every run had the same task at this index: their tasks.jsonl differ">
                        ≠ task
                      </span>
                    )}
                  </td>
                  {row.cells.map((c) => (
                    <td key={c.runId} className="px-3 py-1 text-right font-mono whitespace-nowrap tabular-nums" title={`${c.scored} scored of ${c.rollouts} rollouts${c.errors ? `, ${c.errors} failed` : ""}`}>
                      {c.rollouts === 0 ? (
                        <span className="text-zinc-600">—</span>
                      ) : (
                        <>
                          <span className="text-zinc-200">{fmtNum(c.mean)}</span>
                          <span className="ml-1 text-zinc-600">
                            n={c.scored}
                            {c.errors > 0 && <span className="text-red-400">+{c.errors}✕</span>}
                          </span>
                          {c.runId !== baselineRunId && <span className={`ml-2 inline-block min-w-14 rounded px-1 ${deltaClass(c.delta)}`}>{fmtSigned(c.delta)}</span>}
                        </>
                      )}
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {filtered.length > limit && (
        <button type="button" className="mt-2 text-[12px] text-zinc-400 underline hover:text-zinc-200" onClick={() => setLimit((n) => n + PAGE * 5)}>
          show more ({filtered.length - limit} not shown)
        </button>
      )}
      {regressionsOnly && filtered.length === 0 && <div className="mt-2 text-[12px] text-zinc-500">No task got worse than the baseline.</div>}
    </div>
  );
}
