/** The experiment's four files as the editor shows them. Shared by the editor and the run's code tab. */
import { EXPERIMENT_FILE_NAMES, type Diagnostic, type ExperimentFileName } from "@contracts";

export const FILE_LANGUAGE: Record<ExperimentFileName, string> = {
  "scenario.ts": "typescript",
  "reward.ts": "typescript",
  "tasks.jsonl": "plaintext",
  "config.json": "json",
};

export const fileUri = (name: ExperimentFileName) => `file:///${name}`;

export function isExperimentFile(name: string): name is ExperimentFileName {
  return (EXPERIMENT_FILE_NAMES as readonly string[]).includes(name);
}

/** Diagnostics may name a file with a path prefix ("/scenario.ts", "src/reward.ts"): match on the base name. */
export function diagnosticFile(d: Pick<Diagnostic, "file">): ExperimentFileName | null {
  const base = d.file.split(/[\\/]/).pop() ?? d.file;
  return isExperimentFile(base) ? base : null;
}

/** Problems in tasks.jsonl a user can fix before running: lines that are not a JSON object. */
export function jsonlDiagnostics(text: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    try {
      const v: unknown = JSON.parse(line);
      if (typeof v !== "object" || v === null || Array.isArray(v)) {
        out.push({ file: "tasks.jsonl", line: i + 1, column: 1, message: "each line must be a JSON object", severity: "error" });
      }
    } catch (e) {
      out.push({ file: "tasks.jsonl", line: i + 1, column: 1, message: `invalid JSON: ${(e as Error).message}`, severity: "error" });
    }
  });
  return out;
}
