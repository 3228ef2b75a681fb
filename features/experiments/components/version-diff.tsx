"use client";
/**
 * Two sets of an experiment's files side by side in Monaco's diff editor (self-hosted, read-only), one file
 * at a time: the files that differ come first, marked M (changed), A (only on the right), D (only on the
 * left). Text is shown as text: Monaco never renders it as HTML.
 */
import dynamic from "next/dynamic";
import { useMemo, useState } from "react";
import { DiffFileList } from "@/components/code/diff-file-list";
import { activeDiffFile, diffCountText, fileStates, stateTitles } from "@/components/code/diff-files";
import { fileLanguage } from "@/components/code/files";

const MonacoDiff = dynamic(() => import("@/components/code/monaco-diff"), {
  ssr: false,
  loading: () => <div className="p-4 text-[12px] text-zinc-500">Loading diff…</div>,
});

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
  const [picked, setPicked] = useState<string | null>(null);
  const active = activeDiffFile(files, picked);
  const titles = useMemo(() => stateTitles(leftLabel, rightLabel), [leftLabel, rightLabel]);

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
          {diffCountText(files)}
        </span>
      </div>
      <div className="flex min-h-0 flex-1 overflow-hidden rounded border border-zinc-800">
        <DiffFileList files={files} active={active} titles={titles} onPick={setPicked} testId="version-diff-files" widthClassName="w-48" />
        <div className="min-w-0 flex-1">
          <MonacoDiff original={left[active] ?? ""} modified={right[active] ?? ""} language={fileLanguage(active)} />
        </div>
      </div>
    </div>
  );
}
