/** An experiment's files as the editor shows them. Shared by the editor and the run's code tab. */
import { isExperimentPath, parseTasks, sortPaths, type Diagnostic } from "@contracts";

export function fileLanguage(path: string): string {
  if (path.endsWith(".ts")) return "typescript";
  if (path.endsWith(".json")) return "json";
  return "plaintext";
}

export const fileUri = (path: string) => `file:///${path}`;

/** The experiment's paths in display order. */
export const filePaths = (files: Record<string, string>) => sortPaths(Object.keys(files));

/**
 * The experiment file a diagnostic is about. Diagnostics may name a file with a leading slash or a folder
 * prefix from elsewhere ("/scenario.ts", "src/reward.ts"): match the exact path first, then the base name.
 */
export function diagnosticFile(d: Pick<Diagnostic, "file">, files: Record<string, string>): string | null {
  const path = d.file.replace(/^\/+/, "");
  if (Object.hasOwn(files, path) && isExperimentPath(path)) return path;
  const base = path.split(/[\\/]/).pop() ?? path;
  return Object.keys(files).find((p) => p === base || p.endsWith(`/${base}`)) ?? null;
}

/** Problems in tasks.jsonl a user can fix before running, from the same parser the runner uses. */
export function jsonlDiagnostics(text: string): Diagnostic[] {
  const parsed = parseTasks(text);
  return parsed.ok ? [] : parsed.diagnostics;
}
