"use client";
/**
 * Re-score: edit the run's reward.ts and run it over the run's stored trajectories — no new sampling — to
 * see how rewards and GRPO advantages would change, per task and overall. Nothing is written to the run.
 * The editor's problems come back from the runner at their line; a reward that throws on one trajectory
 * shows that trajectory's error with links to the line. Members and above only (the server refuses viewers).
 * Task data, logs and errors are user text: rendered as text.
 */
import { useMutation } from "@tanstack/react-query";
import dynamic from "next/dynamic";
import { useEffect, useMemo, useState, type ReactNode } from "react";
import type { Diagnostic } from "@contracts";
import { useTypeLibs } from "@/components/code/use-type-libs";
import { useTRPC, type RouterOutputs } from "@/components/trpc";
import { fmtInt, fmtMs, fmtNum, fmtSigned } from "@/components/ui/format";
import { Button, ErrorBox, Spinner } from "@/components/ui/primitives";
import { RolloutErrorView } from "@/features/run-view";
import { RewardValue, taskPreview } from "@/features/run-view";
import type { RevealLine } from "./rescore-editor";

const RescoreEditor = dynamic(() => import("./rescore-editor"), {
  ssr: false,
  loading: () => <div className="p-4 text-zinc-500">Loading editor…</div>,
});

type Result = RouterOutputs["runs"]["rescore"];
type Ok = Extract<Result, { ok: true }>;
type TaskRow = Ok["tasks"][number];
type TrajRow = Ok["rows"][number];

/** Trajectory rows rendered at once; "Show more" adds as many (2,000 rows of cells at once would stall the page). */
const PAGE = 200;
const EPSILON = 1e-9;

export function RescoreButton(props: { runId: string; runNumber: number; files: Record<string, string>; lastStep: number }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button onClick={() => setOpen(true)} title="Run an edited reward over this run's stored trajectories (no new sampling)">
        Re-score
      </Button>
      {open && <RescorePanel {...props} onClose={() => setOpen(false)} />}
    </>
  );
}

function RescorePanel({ runId, runNumber, files, lastStep, onClose }: { runId: string; runNumber: number; files: Record<string, string>; lastStep: number; onClose: () => void }) {
  const trpc = useTRPC();
  const typeLibs = useTypeLibs();
  const [reward, setReward] = useState(files["reward.ts"] ?? "");
  const [split, setSplit] = useState<"train" | "val" | "all">("train");
  const [step, setStep] = useState<number | "all">("all");
  const [reveal, setReveal] = useState<RevealLine | null>(null);
  const rescore = useMutation(trpc.runs.rescore.mutationOptions());
  const [scoredText, setScoredText] = useState<string | null>(null);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);

  const run = () => {
    setScoredText(reward);
    rescore.mutate({ runId, files: { "reward.ts": reward }, ...(split === "all" ? {} : { split }), ...(step === "all" ? {} : { step }) });
  };
  const data = rescore.data;
  const diagnostics: Diagnostic[] = useMemo(() => data?.diagnostics ?? [], [data]);
  const rewardDiagnostics = useMemo(() => diagnostics.filter((d) => d.file.replace(/^\/+/, "") === "reward.ts"), [diagnostics]);
  const openLine = (line: number, column: number) => setReveal({ line, column, nonce: Date.now() });

  return (
    <div className="fixed inset-0 z-40 flex justify-end bg-black/50" onClick={onClose}>
      <div
        role="dialog"
        aria-label="Re-score"
        className="flex h-full w-full max-w-7xl flex-col overflow-hidden border-l border-zinc-800 bg-zinc-950 text-[13px]"
        onClick={(e) => e.stopPropagation()}
      >
        <div className="flex shrink-0 flex-wrap items-center gap-3 border-b border-zinc-800 px-4 py-2.5">
          <h2 className="font-semibold text-zinc-100">Re-score run #{runNumber}</h2>
          <span className="text-[12px] text-zinc-500">Edit reward.ts and run it over the stored trajectories. Nothing is sampled or saved.</span>
          <div className="ml-auto flex items-center gap-2">
            <select aria-label="Split" value={split} onChange={(e) => setSplit(e.target.value as typeof split)} className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200">
              <option value="train">train</option>
              <option value="val">eval</option>
              <option value="all">train + eval</option>
            </select>
            <select
              aria-label="Step"
              value={String(step)}
              onChange={(e) => setStep(e.target.value === "all" ? "all" : Number(e.target.value))}
              className="h-7 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-[12px] text-zinc-200"
            >
              <option value="all">all steps</option>
              {Array.from({ length: lastStep + 1 }, (_, s) => (
                <option key={s} value={s}>
                  step {s}
                </option>
              ))}
            </select>
            <Button variant="primary" onClick={run} disabled={rescore.isPending} data-testid="rescore-run">
              {rescore.isPending ? "Re-scoring…" : "Re-score"}
            </Button>
            <Button variant="ghost" onClick={onClose} aria-label="Close">
              ✕
            </Button>
          </div>
        </div>

        <div className="flex min-h-0 flex-1 flex-col lg:flex-row">
          <div className="flex h-[45vh] min-h-0 shrink-0 flex-col border-b border-zinc-800 lg:h-auto lg:w-[44%] lg:border-r lg:border-b-0">
            <div className="border-b border-zinc-800 px-3 py-1 font-mono text-[12px] text-zinc-400">
              reward.ts {scoredText !== null && scoredText !== reward && <span className="ml-2 font-sans text-amber-300">edited since the results below</span>}
            </div>
            <div className="min-h-0 flex-1">
              {typeLibs.data ? (
                <RescoreEditor runId={runId} files={files} typeLibs={typeLibs.data} onChange={setReward} diagnostics={rewardDiagnostics} reveal={reveal} />
              ) : typeLibs.error ? (
                <div className="p-3 text-red-300">Could not load the SDK types: {typeLibs.error.message}</div>
              ) : (
                <Spinner label="Loading editor…" />
              )}
            </div>
            {diagnostics.length > 0 && <DiagnosticList diagnostics={diagnostics} onOpen={(d) => d.file.replace(/^\/+/, "") === "reward.ts" && openLine(d.line, d.column)} />}
          </div>

          <div className="min-h-0 min-w-0 flex-1 overflow-auto p-4" data-testid="rescore-results">
            {rescore.isPending && <Spinner label="Compiling and running the reward over the trajectories…" />}
            {rescore.error && <ErrorBox title="Re-score failed">{rescore.error.message}</ErrorBox>}
            {data && !data.ok && (
              <ErrorBox title="The edited files do not check">
                <span className="font-mono">{data.error}</span>
              </ErrorBox>
            )}
            {data?.ok && <Results result={data} onOpenLine={openLine} />}
            {!data && !rescore.isPending && !rescore.error && (
              <div className="text-[12px] text-zinc-500">Press Re-score to see how the edited reward would have scored this run&apos;s trajectories.</div>
            )}
          </div>
        </div>
      </div>
    </div>
  );
}

function DiagnosticList({ diagnostics, onOpen }: { diagnostics: readonly Diagnostic[]; onOpen: (d: Diagnostic) => void }) {
  return (
    <ul data-testid="rescore-diagnostics" className="max-h-40 shrink-0 overflow-auto border-t border-zinc-800 px-3 py-1.5 font-mono text-[12px]">
      {diagnostics.map((d, i) => (
        <li key={i}>
          <button type="button" onClick={() => onOpen(d)} className={`text-left hover:underline ${d.severity === "warning" ? "text-amber-300" : "text-red-300"}`}>
            {d.file}:{d.line}:{d.column} {d.message}
          </button>
        </li>
      ))}
    </ul>
  );
}

function deltaClass(d: number | null): string {
  if (d === null || Math.abs(d) <= EPSILON) return "text-zinc-500";
  return d < 0 ? "text-red-300" : "text-emerald-300";
}

function Results({ result, onOpenLine }: { result: Ok; onOpenLine: (line: number, column: number) => void }) {
  const [task, setTask] = useState<string | null>(null);
  const o = result.overall;
  return (
    <div className="space-y-5">
      <div data-testid="rescore-overall" className="flex flex-wrap items-baseline gap-x-6 gap-y-2">
        <div>
          <div className="text-[10px] tracking-wide text-zinc-500 uppercase">Mean reward</div>
          <div className="font-mono text-[18px] text-zinc-100 tabular-nums">
            {fmtNum(o.oldMean)} <span className="text-zinc-500">→</span> {fmtNum(o.newMean)}{" "}
            <span className={`text-[14px] ${deltaClass(o.delta)}`}>{fmtSigned(o.delta)}</span>
          </div>
        </div>
        <Fact label="Changed" value={`${fmtInt(o.changed)} of ${fmtInt(o.trajectories)}`} />
        <Fact label="Advantage sign flips" value={fmtInt(o.signFlips)} />
        <Fact label="Groups untrainable now" value={fmtInt(o.groupsBecameUntrainable)} title="Training groups whose rewards no longer differ: every advantage 0, nothing to learn" />
        <Fact label="Groups trainable now" value={fmtInt(o.groupsBecameTrainable)} title="Training groups that had no reward variance and now have some" />
        <Fact label="New errors" value={<span className={o.newErrors ? "text-red-300" : undefined}>{fmtInt(o.newErrors)}</span>} />
        {o.fixedErrors > 0 && <Fact label="Errors fixed" value={<span className="text-emerald-300">{fmtInt(o.fixedErrors)}</span>} />}
        <Fact label="Took" value={fmtMs(result.durationMs)} />
      </div>
      <div className="space-y-0.5 text-[12px] text-zinc-500">
        <div>
          {fmtInt(result.loaded)} of {fmtInt(result.available)} trajectories
          {result.steps ? ` (steps ${result.steps.first}–${result.steps.last})` : ""}; {fmtInt(o.rescored)} re-scored
          {o.trajectories > o.rescored ? `, ${fmtInt(o.trajectories - o.rescored)} skipped (their scenario failed)` : ""}.
        </div>
        {result.capped && (
          <div className="text-amber-300">
            Capped at {fmtInt(result.limit)} trajectories per re-score (whole groups only): pick a step to see the others.
          </div>
        )}
        {result.outputsMissing > 0 && (
          <div className="text-amber-300">
            {fmtInt(result.outputsMissing)} trajectories were recorded before scenario outputs were kept: their reward saw output = null.
          </div>
        )}
        {result.groupReward && <div>reward.ts exports groupReward: training groups were re-scored together, as in the run.</div>}
        {result.scaleRewards.old !== result.scaleRewards.new && (
          <div>trainer.scale_rewards changed ({String(result.scaleRewards.old)} → {String(result.scaleRewards.new)}): new advantages use the edited setting.</div>
        )}
      </div>
      <TaskTable tasks={result.tasks} selected={task} onSelect={setTask} />
      <TrajectoryTable rows={result.rows} task={task} onClearTask={() => setTask(null)} onOpenLine={onOpenLine} />
    </div>
  );
}

function Fact({ label, value, title }: { label: string; value: ReactNode; title?: string }) {
  return (
    <div title={title}>
      <div className="text-[10px] tracking-wide text-zinc-500 uppercase">{label}</div>
      <div className="font-mono text-zinc-200 tabular-nums">{value}</div>
    </div>
  );
}

const taskKey = (t: { split: string; taskIndex: number }) => `${t.split}:${t.taskIndex}`;

type SortKey = "change" | "task" | "trajectories" | "oldMean" | "newMean" | "changed" | "signFlips" | "untrainable" | "newErrors";

const SORTS: Record<SortKey, (t: TaskRow) => number | string> = {
  change: (t) => Math.abs(t.delta ?? 0),
  task: (t) => `${t.split}:${String(t.taskIndex).padStart(8, "0")}`,
  trajectories: (t) => t.trajectories,
  oldMean: (t) => t.oldMean ?? -Infinity,
  newMean: (t) => t.newMean ?? -Infinity,
  changed: (t) => t.changed,
  signFlips: (t) => t.signFlips,
  untrainable: (t) => t.groupsBecameUntrainable,
  newErrors: (t) => t.newErrors,
};

function TaskTable({ tasks, selected, onSelect }: { tasks: readonly TaskRow[]; selected: string | null; onSelect: (key: string | null) => void }) {
  const [sort, setSort] = useState<{ key: SortKey; desc: boolean }>({ key: "change", desc: true });
  const sorted = useMemo(() => {
    const get = SORTS[sort.key];
    return [...tasks].sort((a, b) => {
      const x = get(a);
      const y = get(b);
      const c = x < y ? -1 : x > y ? 1 : 0;
      return sort.desc ? -c : c;
    });
  }, [tasks, sort]);
  const header = (key: SortKey, label: string, title?: string) => (
    <th className="px-2 py-1 text-right font-normal first:text-left" title={title} aria-sort={sort.key === key ? (sort.desc ? "descending" : "ascending") : undefined}>
      <button type="button" className="hover:text-zinc-200" onClick={() => setSort((s) => ({ key, desc: s.key === key ? !s.desc : key !== "task" }))}>
        {label}
        {sort.key === key ? (sort.desc ? " ↓" : " ↑") : ""}
      </button>
    </th>
  );
  return (
    <div>
      <h3 className="mb-1.5 text-[12px] font-semibold text-zinc-300">Per task</h3>
      <div className="max-h-80 overflow-auto rounded border border-zinc-800">
        <table data-testid="rescore-tasks" className="w-full text-[12px]">
          <thead className="sticky top-0 bg-zinc-900 text-zinc-500">
            <tr>
              {header("task", "task")}
              {header("trajectories", "n")}
              {header("oldMean", "old mean")}
              {header("newMean", "new mean")}
              {header("change", "Δ", "new mean − old mean (sorted by size)")}
              {header("changed", "changed")}
              {header("signFlips", "sign flips")}
              {header("untrainable", "untrainable", "groups that lost (+ gained) reward variance")}
              {header("newErrors", "errors")}
            </tr>
          </thead>
          <tbody>
            {sorted.map((t) => {
              const key = taskKey(t);
              return (
                <tr
                  key={key}
                  onClick={() => onSelect(selected === key ? null : key)}
                  className={`cursor-pointer border-t border-zinc-800/60 ${selected === key ? "bg-zinc-800/70" : "hover:bg-zinc-900"}`}
                >
                  <td className="max-w-72 truncate px-2 py-1 text-zinc-200" title={JSON.stringify(t.task) ?? ""}>
                    <span className="mr-1.5 font-mono text-zinc-500">{t.split === "val" ? "eval " : ""}#{t.taskIndex}</span>
                    {taskPreview(t.task)}
                  </td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">{t.trajectories}</td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">{fmtNum(t.oldMean)}</td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">{fmtNum(t.newMean)}</td>
                  <td className={`px-2 py-1 text-right font-mono tabular-nums ${deltaClass(t.delta)}`}>{fmtSigned(t.delta)}</td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">{t.changed}</td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">{t.signFlips}</td>
                  <td className="px-2 py-1 text-right font-mono tabular-nums">
                    {t.groupsBecameUntrainable}
                    {t.groupsBecameTrainable > 0 && <span className="text-emerald-300"> +{t.groupsBecameTrainable}</span>}
                  </td>
                  <td className={`px-2 py-1 text-right font-mono tabular-nums ${t.newErrors ? "text-red-300" : ""}`}>{t.newErrors}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function TrajectoryTable({ rows, task, onClearTask, onOpenLine }: { rows: readonly TrajRow[]; task: string | null; onClearTask: () => void; onOpenLine: (line: number, column: number) => void }) {
  const [onlyChanged, setOnlyChanged] = useState(true);
  const [limit, setLimit] = useState(PAGE);
  const [open, setOpen] = useState<string | null>(null);
  const filtered = useMemo(() => rows.filter((r) => (!onlyChanged || r.changed || r.signFlip || (r.newError && r.status === "rescored")) && (!task || taskKey(r) === task)), [rows, onlyChanged, task]);
  const shown = filtered.slice(0, limit);
  return (
    <div>
      <div className="mb-1.5 flex flex-wrap items-center gap-4 text-[12px] text-zinc-400">
        <h3 className="font-semibold text-zinc-300">Trajectories</h3>
        <label className="flex items-center gap-1.5">
          <input type="checkbox" checked={onlyChanged} onChange={(e) => setOnlyChanged(e.target.checked)} data-testid="rescore-only-changed" />
          only changed
        </label>
        {task && (
          <button type="button" className="rounded bg-zinc-800 px-1.5 text-zinc-300 hover:bg-zinc-700" onClick={onClearTask}>
            task {task.replace(/^val:/, "eval #").replace(/^train:/, "#")} ✕
          </button>
        )}
        <span className="text-zinc-600">
          {fmtInt(filtered.length)} of {fmtInt(rows.length)}
        </span>
      </div>
      <div className="overflow-auto rounded border border-zinc-800">
        <table data-testid="rescore-rows" className="w-full text-[12px]">
          <thead className="bg-zinc-900 text-zinc-500">
            <tr>
              <th className="px-2 py-1 text-left font-normal">trajectory</th>
              <th className="px-2 py-1 text-right font-normal">old reward</th>
              <th className="px-2 py-1 text-right font-normal">new reward</th>
              <th className="px-2 py-1 text-right font-normal">old adv.</th>
              <th className="px-2 py-1 text-right font-normal">new adv.</th>
              <th className="px-2 py-1 text-left font-normal">note</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <TrajectoryRow key={r.id} row={r} open={open === r.id} onToggle={() => setOpen(open === r.id ? null : r.id)} onOpenLine={onOpenLine} />
            ))}
          </tbody>
        </table>
        {filtered.length === 0 && <div className="p-3 text-[12px] text-zinc-500">{onlyChanged ? "No trajectory changed." : "No trajectories."}</div>}
      </div>
      {filtered.length > limit && (
        <div className="mt-2">
          <Button variant="ghost" onClick={() => setLimit((n) => n + PAGE)}>
            Show {Math.min(PAGE, filtered.length - limit)} more
          </Button>
        </div>
      )}
    </div>
  );
}

function Advantage({ value, flip }: { value: number | null; flip?: boolean }) {
  if (value === null) return <span className="text-zinc-600" title="does not train (failed, zero advantage, untrainable group, or eval)">—</span>;
  return <span className={`${value >= 0 ? "text-emerald-300" : "text-red-300"} ${flip ? "rounded ring-1 ring-amber-400/70" : ""}`}>{fmtSigned(value)}</span>;
}

function TrajectoryRow({ row: r, open, onToggle, onOpenLine }: { row: TrajRow; open: boolean; onToggle: () => void; onOpenLine: (line: number, column: number) => void }) {
  const note =
    r.status === "skipped"
      ? "skipped"
      : r.newError
        ? `${r.newError.kind}: ${r.newError.message}`
        : r.signFlip
          ? "advantage sign flipped"
          : r.oldError && !r.newError
            ? "error fixed"
            : "";
  return (
    <>
      <tr onClick={onToggle} className={`cursor-pointer border-t border-zinc-800/60 ${open ? "bg-zinc-800/60" : "hover:bg-zinc-900"}`} data-testid="rescore-row">
        <td className="px-2 py-1 font-mono text-zinc-400">
          {r.split === "val" ? "eval " : ""}s{r.step} g{r.group} <span className="text-zinc-600">#{r.taskIndex}</span>
        </td>
        <td className="px-2 py-1 text-right">
          <RewardValue reward={r.oldReward} />
        </td>
        <td className={`px-2 py-1 text-right ${r.changed ? "bg-amber-400/10" : ""}`}>
          <RewardValue reward={r.newReward} />
        </td>
        <td className="px-2 py-1 text-right font-mono tabular-nums">
          <Advantage value={r.oldAdvantage} />
        </td>
        <td className="px-2 py-1 text-right font-mono tabular-nums">
          <Advantage value={r.newAdvantage} flip={r.signFlip} />
        </td>
        <td className={`max-w-80 truncate px-2 py-1 ${r.newError && r.status === "rescored" ? "text-red-300" : "text-zinc-500"}`} title={note}>
          {note}
        </td>
      </tr>
      {open && (
        <tr className="bg-zinc-900/60">
          <td colSpan={6} className="px-3 py-2">
            <div className="font-mono text-[11px] break-all text-zinc-500">{r.id}</div>
            {r.skippedReason && <div className="mt-1 text-zinc-400">{r.skippedReason}</div>}
            {r.status === "rescored" && r.newError && (
              <RolloutErrorView error={r.newError} onOpenFrame={(f) => f.file === "reward.ts" && onOpenLine(f.line, f.column)} />
            )}
            {!r.outputRecorded && r.status === "rescored" && <div className="mt-1 text-amber-300">No scenario output was recorded with this trajectory: the reward saw output = null.</div>}
            {Object.keys(r.newMetrics).length > 0 && (
              <div className="mt-1.5 flex flex-wrap gap-x-4 font-mono text-[11px] text-zinc-400">
                {Object.entries(r.newMetrics).map(([k, v]) => (
                  <span key={k}>
                    {k} <span className="text-zinc-200">{fmtNum(v)}</span>
                  </span>
                ))}
              </div>
            )}
            {r.newLogs.length > 0 && <pre className="mt-1.5 max-h-40 overflow-auto font-mono text-[11px] whitespace-pre-wrap text-zinc-400">{r.newLogs.join("\n")}</pre>}
          </td>
        </tr>
      )}
    </>
  );
}
