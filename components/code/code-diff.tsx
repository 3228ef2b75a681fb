"use client";
/**
 * The exact files two of the compared runs ran, side by side in Monaco's diff editor. Which two: any pair
 * (default: the baseline on the left, the first other run on the right). Files that differ are listed
 * first, marked; a file only one run has diffs against nothing.
 */
import dynamic from "next/dynamic";
import { useMemo, useState } from "react";
import { sortPaths } from "@contracts";
import { fileLanguage } from "./files";
import { runColor } from "@/features/compare";

const MonacoDiff = dynamic(() => import("./monaco-diff"), {
  ssr: false,
  loading: () => <div className="p-4 text-[12px] text-zinc-500">Loading diff…</div>,
});

export interface CodeRun {
  id: string;
  number: number;
  files: Record<string, string>;
}

export type FileState = "changed" | "added" | "removed" | "same";

const MARK: Record<FileState, { sign: string; className: string; title: string }> = {
  changed: { sign: "M", className: "text-amber-300", title: "differs" },
  added: { sign: "A", className: "text-emerald-300", title: "only in the right run" },
  removed: { sign: "D", className: "text-red-300", title: "only in the left run" },
  same: { sign: "", className: "", title: "identical" },
};

export function fileStates(left: Record<string, string>, right: Record<string, string>): { path: string; state: FileState }[] {
  const paths = sortPaths([...new Set([...Object.keys(left), ...Object.keys(right)])]);
  const list = paths.map((path) => {
    const l = Object.hasOwn(left, path) ? left[path] : undefined;
    const r = Object.hasOwn(right, path) ? right[path] : undefined;
    const state: FileState = l === undefined ? "added" : r === undefined ? "removed" : l === r ? "same" : "changed";
    return { path, state };
  });
  // Differing files first; within each half the experiment's usual order (scenario, reward, tasks, config, lib/…).
  return [...list.filter((f) => f.state !== "same"), ...list.filter((f) => f.state === "same")];
}

function RunPicker({ label, runs, value, onChange }: { label: string; runs: readonly CodeRun[]; value: string; onChange: (id: string) => void }) {
  const index = runs.findIndex((r) => r.id === value);
  return (
    <label className="flex items-center gap-1.5">
      <span className="text-zinc-500">{label}</span>
      <select
        aria-label={`${label} run`}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        className="rounded border border-zinc-700 bg-zinc-900 px-1.5 py-0.5 font-mono text-[12px]"
        style={{ color: runColor(index) }}
      >
        {runs.map((r, i) => (
          <option key={r.id} value={r.id} style={{ color: runColor(i) }}>
            #{r.number}
          </option>
        ))}
      </select>
    </label>
  );
}

export function CodeDiff({ runs, baselineRunId }: { runs: readonly CodeRun[]; baselineRunId: string }) {
  const [leftId, setLeftId] = useState(baselineRunId);
  const [rightId, setRightId] = useState(() => runs.find((r) => r.id !== baselineRunId)?.id ?? baselineRunId);
  // A baseline changed from the page header moves the left side with it (adjusted while rendering).
  const [seenBaseline, setSeenBaseline] = useState(baselineRunId);
  if (seenBaseline !== baselineRunId) {
    setSeenBaseline(baselineRunId);
    setLeftId(baselineRunId);
    if (rightId === baselineRunId) setRightId(runs.find((r) => r.id !== baselineRunId)?.id ?? baselineRunId);
  }
  const left = runs.find((r) => r.id === leftId) ?? runs[0]!;
  const right = runs.find((r) => r.id === rightId) ?? runs[1] ?? runs[0]!;
  const files = useMemo(() => fileStates(left.files, right.files), [left, right]);
  const differing = files.filter((f) => f.state !== "same").length;
  const [picked, setPicked] = useState<string | null>(null);
  const active = files.find((f) => f.path === picked)?.path ?? files[0]?.path ?? "scenario.ts";

  return (
    <div>
      <div className="mb-2 flex flex-wrap items-center gap-4 text-[12px] text-zinc-400">
        <RunPicker label="left" runs={runs} value={left.id} onChange={setLeftId} />
        <button
          type="button"
          className="text-zinc-500 hover:text-zinc-200"
          title="Swap sides"
          aria-label="Swap sides"
          onClick={() => {
            setLeftId(right.id);
            setRightId(left.id);
          }}
        >
          ⇄
        </button>
        <RunPicker label="right" runs={runs} value={right.id} onChange={setRightId} />
        <span data-testid="code-diff-count">
          {left.id === right.id ? "the same run on both sides" : differing === 0 ? "the files are identical" : `${differing} of ${files.length} files differ`}
        </span>
      </div>
      <div className="flex h-[65vh] min-h-80 overflow-hidden rounded border border-zinc-800">
        <ul className="w-52 shrink-0 overflow-y-auto border-r border-zinc-800 bg-zinc-900/60 py-1" aria-label="Files" data-testid="code-diff-files">
          {files.map((f) => (
            <li key={f.path}>
              <button
                type="button"
                onClick={() => setPicked(f.path)}
                aria-current={f.path === active ? "true" : undefined}
                title={MARK[f.state].title}
                className={`flex w-full items-center gap-2 px-3 py-1 text-left font-mono text-[12px] ${
                  f.path === active ? "bg-zinc-800 text-zinc-100" : f.state === "same" ? "text-zinc-500 hover:bg-zinc-800/60" : "text-zinc-200 hover:bg-zinc-800/60"
                }`}
              >
                <span className={`w-3 shrink-0 text-center font-bold ${MARK[f.state].className}`} aria-label={MARK[f.state].title}>
                  {MARK[f.state].sign}
                </span>
                <span className="truncate">{f.path}</span>
              </button>
            </li>
          ))}
        </ul>
        <div className="min-w-0 flex-1" data-testid="code-diff-editor">
          <MonacoDiff original={left.files[active] ?? ""} modified={right.files[active] ?? ""} language={fileLanguage(active)} />
        </div>
      </div>
    </div>
  );
}
