/**
 * tasks.jsonl → train and validation tasks. One JSON object per non-blank line; the reserved key
 * `"split": "train" | "val"` picks the split (train by default) and is removed from the task the scenario
 * sees. Every bad line is reported, so a user fixes the file in one pass instead of one error per run.
 */
import { jsonErrorOffset, type Diagnostic } from "../../contracts";

export interface TaskRow {
  /** Index within its split (what Trajectory.task_index refers to). */
  index: number;
  /** 1-based line in tasks.jsonl. */
  line: number;
  split: "train" | "val";
  data: unknown;
}

export type ParseTasksResult = { ok: true; train: TaskRow[]; val: TaskRow[] } | { ok: false; diagnostics: Diagnostic[] };

const FILE = "tasks.jsonl";

export function parseTasks(text: string): ParseTasksResult {
  const train: TaskRow[] = [];
  const val: TaskRow[] = [];
  const diagnostics: Diagnostic[] = [];
  const fail = (line: number, reason: string, column = 1) =>
    diagnostics.push({ file: FILE, line, column, message: `${FILE} line ${line}: ${reason}`, severity: "error" });

  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      fail(line, `invalid JSON (${(err as Error).message})`, jsonErrorOffset(raw) + 1);
      return;
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      fail(line, `each line must be a JSON object, got ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`);
      return;
    }
    const { split = "train", ...data } = value as Record<string, unknown>;
    if (split !== "train" && split !== "val") {
      fail(line, `"split" must be "train" or "val", got ${JSON.stringify(split)}`);
      return;
    }
    const rows = split === "train" ? train : val;
    rows.push({ index: rows.length, line, split, data });
  });

  if (diagnostics.length > 0) return { ok: false, diagnostics };
  if (train.length === 0) {
    fail(1, `no training tasks: add at least one line without "split": "val"`);
    return { ok: false, diagnostics };
  }
  return { ok: true, train, val };
}
