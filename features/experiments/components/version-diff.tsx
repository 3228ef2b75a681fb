"use client";
/**
 * Two sets of an experiment's files side by side in Monaco's diff editor (self-hosted, read-only), one file
 * at a time: the files that differ come first, marked M (changed), A (only on the right), D (only on the
 * left). Text is shown as text: Monaco never renders it as HTML.
 */
import dynamic from "next/dynamic";
import { useMemo, useState } from "react";
import { fileStates, type FileState } from "@/components/code/code-diff";
import { fileLanguage } from "@/components/code/files";

const MonacoDiff = dynamic(() => import("@/components/code/monaco-diff"), {
  ssr: false,
  loading: () => <div className="p-4 text-[12px] text-zinc-500">Loading diff…</div>,
});

const MARK: Record<FileState, { sign: string; className: string }> = {
  changed: { sign: "M", className: "text-amber-300" },
  added: { sign: "A", className: "text-emerald-300" },
  removed: { sign: "D", className: "text-red-300" },
  same: { sign: "", className: "" },
};

export function VersionDiff({
  left,
  right,
  leftLabel,
  rightLabel,
}: {
  left: Record<string, string>;
  right: Record<string, string>;
  leftLabel: string;
  rightLabel: string;
}) {
  const files = useMemo(() => fileStates(left, right), [left, right]);
  const differing = files.filter((f) => f.state !== "same").length;
  const [picked, setPicked] = useState<string | null>(null);
  const active = files.find((f) => f.path === picked)?.path ?? files[0]?.path ?? "scenario.ts";
  const title = (s: FileState) =>
    s === "changed" ? "differs" : s === "added" ? `only in ${rightLabel}` : s === "removed" ? `only in ${leftLabel}` : "identical";

  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <div className="flex items-center gap-3 px-1 pb-2 text-[12px] text-zinc-400">
        <span>
          left: <span className="font-mono text-zinc-200">{leftLabel}</span>
        </span>
        <span>
          right: <span className="font-mono text-zinc-200">{rightLabel}</span>
        </span>
        <span className="ml-auto" data-testid="version-diff-count">
          {differing === 0 ? "the files are identical" : `${differing} of ${files.length} files differ`}
        </span>
      </div>
      <div className="flex min-h-0 flex-1 overflow-hidden rounded border border-zinc-800">
        <ul className="w-48 shrink-0 overflow-y-auto border-r border-zinc-800 bg-zinc-900/60 py-1" aria-label="Files" data-testid="version-diff-files">
          {files.map((f) => (
            <li key={f.path}>
              <button
                type="button"
                onClick={() => setPicked(f.path)}
                aria-current={f.path === active ? "true" : undefined}
                title={title(f.state)}
                className={`flex w-full items-center gap-2 px-3 py-1 text-left font-mono text-[12px] ${
                  f.path === active ? "bg-zinc-800 text-zinc-100" : f.state === "same" ? "text-zinc-500 hover:bg-zinc-800/60" : "text-zinc-200 hover:bg-zinc-800/60"
                }`}
              >
                <span className={`w-3 shrink-0 text-center font-bold ${MARK[f.state].className}`} aria-label={title(f.state)}>
                  {MARK[f.state].sign}
                </span>
                <span className="truncate">{f.path}</span>
              </button>
            </li>
          ))}
        </ul>
        <div className="min-w-0 flex-1">
          <MonacoDiff original={left[active] ?? ""} modified={right[active] ?? ""} language={fileLanguage(active)} />
        </div>
      </div>
    </div>
  );
}
