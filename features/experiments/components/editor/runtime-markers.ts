/**
 * The latest run's runtime errors as warnings at their frames in the editor — only while the editor's
 * code is exactly the code that run executed. After any edit to a TypeScript file the lines may have
 * moved, and a marker at a moved line would point at the wrong code, so none is shown.
 */
import { codePaths, type Diagnostic } from "@contracts";
import type { RouterOutputs } from "@/components/trpc";
import { userFrames } from "@/components/code/stack-frames";

export type LatestRuntimeErrors = NonNullable<RouterOutputs["experiments"]["latestRuntimeErrors"]>;

/** The same TypeScript files with the same text (config and tasks do not move a frame). */
export function sameCode(runCode: Record<string, string>, files: Record<string, string>): boolean {
  const mine = codePaths(files);
  const theirs = Object.keys(runCode);
  return mine.length === theirs.length && mine.every((p) => Object.hasOwn(runCode, p) && runCode[p] === files[p]);
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** Warnings for every user frame of every error: the innermost frame says what failed, outer ones that it was called from there. */
export function runtimeDiagnostics(latest: LatestRuntimeErrors | null | undefined, files: Record<string, string>): Diagnostic[] {
  if (!latest || latest.errors.length === 0 || !sameCode(latest.code, files)) return [];
  const out: Diagnostic[] = [];
  for (const e of latest.errors) {
    const what = `run #${latest.run.number} (${plural(e.count, "rollout")}): ${e.kind}: ${e.message}`;
    userFrames(e.stack).forEach((f, i) => {
      out.push({
        file: f.file,
        line: f.line,
        column: f.column,
        message: i === 0 ? what : `${what}\n(called from here${f.fn ? `, in ${f.fn}` : ""})`,
        severity: "warning",
      });
    });
  }
  return out;
}
