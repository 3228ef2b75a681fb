"use client";
/**
 * The exact files two of the compared runs ran, side by side in Monaco's diff editor. Which two: any pair
 * (default: the baseline on the left, the first other run on the right). Files that differ are listed
 * first, marked; a file only one run has diffs against nothing.
 */
import dynamic from "next/dynamic";
import { useMemo, useState } from "react";
import { DiffFileList } from "./diff-file-list";
import { activeDiffFile, diffCountText, fileStates, stateTitles } from "./diff-files";
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

/** The compare page names its sides by run. */
const TITLES = stateTitles("the left run", "the right run");

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
  const [picked, setPicked] = useState<string | null>(null);
  const active = activeDiffFile(files, picked);

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
          {left.id === right.id ? "the same run on both sides" : diffCountText(files)}
        </span>
      </div>
      <div className="flex h-[65vh] min-h-80 overflow-hidden rounded border border-zinc-800">
        <DiffFileList files={files} active={active} titles={TITLES} onPick={setPicked} testId="code-diff-files" widthClassName="w-52" />
        <div className="min-w-0 flex-1" data-testid="code-diff-editor">
          <MonacoDiff original={left.files[active] ?? ""} modified={right.files[active] ?? ""} language={fileLanguage(active)} />
        </div>
      </div>
    </div>
  );
}
