/**
 * Which files differ between two sets of an experiment's files, and how the list beside a diff shows each
 * one. Pure, so the compare page's and the version history's lists are tested once (diff-files.test.ts).
 */
import { sortPaths } from "@contracts";

export type FileState = "changed" | "added" | "removed" | "same";

export interface DiffFile {
  path: string;
  state: FileState;
}

export function fileStates(left: Record<string, string>, right: Record<string, string>): DiffFile[] {
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

/** The file the diff shows: the one picked while it is still listed, else the first (differing) one. */
export const activeDiffFile = (files: readonly DiffFile[], picked: string | null): string =>
  files.find((f) => f.path === picked)?.path ?? files[0]?.path ?? "scenario.ts";

/** The count beside the pickers: "2 of 5 files differ", or that none does. */
export function diffCountText(files: readonly DiffFile[]): string {
  const differing = files.filter((f) => f.state !== "same").length;
  return differing === 0 ? "the files are identical" : `${differing} of ${files.length} files differ`;
}

/** Each state's tooltip (and the mark's aria-label), naming the sides as the caller calls them. */
export const stateTitles = (leftName: string, rightName: string): Record<FileState, string> => ({
  changed: "differs",
  added: `only in ${rightName}`,
  removed: `only in ${leftName}`,
  same: "identical",
});

const MARK: Record<FileState, { sign: string; className: string }> = {
  changed: { sign: "M", className: "text-amber-300" },
  added: { sign: "A", className: "text-emerald-300" },
  removed: { sign: "D", className: "text-red-300" },
  same: { sign: "", className: "" },
};

export interface DiffFileRow extends DiffFile {
  current: boolean;
  /** M, A, D, or nothing for an identical file. */
  sign: string;
  title: string;
  buttonClassName: string;
  markClassName: string;
}

/** The list's rows: the active file highlighted, identical files dimmed. */
export function diffFileRows(files: readonly DiffFile[], active: string, titles: Record<FileState, string>): DiffFileRow[] {
  return files.map((f) => {
    const current = f.path === active;
    return {
      ...f,
      current,
      sign: MARK[f.state].sign,
      title: titles[f.state],
      buttonClassName: `flex w-full items-center gap-2 px-3 py-1 text-left font-mono text-[12px] ${
        current ? "bg-zinc-800 text-zinc-100" : f.state === "same" ? "text-zinc-500 hover:bg-zinc-800/60" : "text-zinc-200 hover:bg-zinc-800/60"
      }`,
      markClassName: `w-3 shrink-0 text-center font-bold ${MARK[f.state].className}`,
    };
  });
}
