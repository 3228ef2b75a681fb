/** The editor's one-line notices (over the problems list) and how it reads the server's errors. */
import type { ImportedTasks } from "./task-import-dialog";

export type Notice = { tone: "error" | "ok"; message: string; runId?: string };

/** The server's stale-tab refusal (experiments.save / runs.start with an outdated baseVersion). */
export const isConflict = (e: { data?: { code?: string } | null }) => e.data?.code === "CONFLICT";

/** tRPC's message, or the input issues it carries (`files.lib/x.ts: …`), which name the file. */
export function errorText(e: { message: string; data?: { issues?: string[] | null } | null }): string {
  return e.data?.issues?.length ? e.data.issues.join("; ") : e.message;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** A Check's answer: passed, or how many problems it found (listed below it). */
export function checkNotice(problems: number): Notice {
  return problems === 0
    ? { tone: "ok", message: "Check passed: the runner accepts these files." }
    : { tone: "error", message: `Check found ${plural(problems, "problem")} (click one to jump to it).` };
}

/** A refused run start: its problems (listed below), or the runner's reason; a run created and failed at once links to it. */
export function refusedNotice(res: { diagnostics: readonly unknown[]; error: string; runId?: string }): Notice {
  const runId = "runId" in res && typeof res.runId === "string" ? res.runId : undefined;
  const message =
    res.diagnostics.length > 0 ? `Run refused: ${plural(res.diagnostics.length, "problem")} to fix (click one to jump to it).` : `Run refused: ${res.error}`;
  return { tone: "error", message, runId };
}

export function importedNotice(t: ImportedTasks): Notice {
  const n = (x: number) => x.toLocaleString("en-US");
  return {
    tone: "ok",
    message: `Imported ${n(t.rows)} tasks (${n(t.train)} train, ${n(t.val)} validation) from ${t.fileName} into tasks.jsonl: not saved yet; Ctrl/⌘+Z in the editor undoes it.`,
  };
}

export const restoredNotice = (versionNumber: number): Notice => ({ tone: "ok", message: `Restored: version ${versionNumber} holds the restored files.` });
