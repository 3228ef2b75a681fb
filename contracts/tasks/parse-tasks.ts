/**
 * tasks.jsonl → train and validation tasks: the one parser the editor, the web server and the runner all
 * use. One JSON object per non-blank line; the reserved key `"split": "train" | "val"` picks the split
 * (train by default) and is removed from the task the scenario sees. Every bad line is reported at its
 * line and column (capped, see RowErrorList), so a user fixes the file in one pass.
 */
import type { Diagnostic } from "../run";
import { MAX_TASKS_JSONL_BYTES, tooLargeMessage, utf8ByteLength } from "./limits";
import { type RowError, RowErrorList, rowErrorToDiagnostic } from "./row-error";
import { parseJsonLines } from "./json-lines";

export const TASKS_FILE = "tasks.jsonl";
/** The reserved key that puts a task in the validation split. */
export const SPLIT_KEY = "split";

export interface TaskRow {
  /** Index within its split (what Trajectory.task_index refers to). */
  index: number;
  /** 1-based line in tasks.jsonl. */
  line: number;
  split: "train" | "val";
  /** The task as the scenario sees it: the line's object without the `split` key. */
  data: Record<string, unknown>;
}

export type ParseTasksResult =
  | { ok: true; train: TaskRow[]; val: TaskRow[] }
  | { ok: false; diagnostics: Diagnostic[]; errors: RowError[] };

export function parseTasks(text: string): ParseTasksResult {
  const errors = new RowErrorList();
  const fail = (): ParseTasksResult => {
    const list = errors.list();
    return { ok: false, errors: list, diagnostics: list.map((e) => rowErrorToDiagnostic(e, TASKS_FILE)) };
  };

  // Cheap bound first: a string is never more UTF-8 bytes than 3 per UTF-16 unit, nor fewer than 1.
  const bytes = text.length * 3 <= MAX_TASKS_JSONL_BYTES ? 0 : utf8ByteLength(text);
  if (bytes > MAX_TASKS_JSONL_BYTES) {
    errors.add({ message: tooLargeMessage(bytes, "the file", MAX_TASKS_JSONL_BYTES) });
    return fail();
  }

  const rows = parseJsonLines(text.replace(/^\uFEFF/, ""), errors, {
    withRow: false,
    check: (data) => {
      const split = data[SPLIT_KEY];
      return split === undefined || split === "train" || split === "val"
        ? undefined
        : { field: SPLIT_KEY, message: `must be "train" or "val", got ${JSON.stringify(split)}` };
    },
  });
  const train: TaskRow[] = [];
  const val: TaskRow[] = [];
  for (const { line, data } of rows) {
    const { [SPLIT_KEY]: split, ...task } = data;
    const into = split === "val" ? val : train;
    into.push({ index: into.length, line, split: split === "val" ? "val" : "train", data: task });
  }

  if (errors.count > 0) return fail();
  if (train.length === 0) {
    errors.add({ message: `no training tasks: add at least one line without "split": "val"` });
    return fail();
  }
  return { ok: true, train, val };
}
