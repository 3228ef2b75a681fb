/**
 * The editor's side of "Import tasks…": the split the dialog starts with, the candidate tasks.jsonl and its
 * size check, and where a row error the runner reports in the candidate came from in the uploaded file.
 * Parsing, splitting and writing are the contracts' (importTaskFile, applySplit, toTasksJsonl): the same
 * code the web server and the runner use.
 */
import {
  MAX_TASKS_JSONL_BYTES,
  SPLIT_KEY,
  TASKS_FILE,
  formatBytes,
  toTasksJsonl,
  utf8ByteLength,
  type Diagnostic,
  type SplitRow,
  type SplitSpec,
} from "@contracts";

/**
 * Split by the reserved "split" column when the file has one (the usual export of a split dataset, and
 * Rollbook's own tasks.jsonl, where only validation rows carry it), else 10 % by ratio.
 */
export function defaultSplit(columns: readonly string[]): SplitSpec {
  return columns.includes(SPLIT_KEY) ? { by: "field", field: SPLIT_KEY } : { by: "ratio", val: 0.1, seed: 42 };
}

/** The field "By a field" starts with: "split" when there is one, else the first column. */
export function defaultSplitField(columns: readonly string[]): string {
  return columns.includes(SPLIT_KEY) ? SPLIT_KEY : (columns[0] ?? SPLIT_KEY);
}

/**
 * "test, dev" → ["test", "dev"]; empty → undefined (the common names). Numbers and booleans typed as
 * such match numeric and boolean columns (a `fold` column of 0…4).
 */
export function parseValValues(input: string): (string | number | boolean)[] | undefined {
  const parts = input
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) return undefined;
  return parts.map((p) => (p === "true" ? true : p === "false" ? false : /^-?\d+(\.\d+)?$/.test(p) ? Number(p) : p));
}

export type Candidate = { ok: true; text: string; bytes: number } | { ok: false; message: string };

/** The tasks.jsonl the rows become, refused when it would not fit in an experiment. */
export function candidateTasks(rows: readonly SplitRow[]): Candidate {
  const text = toTasksJsonl(rows);
  const bytes = utf8ByteLength(text);
  if (bytes > MAX_TASKS_JSONL_BYTES) {
    return {
      ok: false,
      message: `the ${TASKS_FILE} made from these rows is ${formatBytes(bytes)}; an experiment's files hold at most ${formatBytes(MAX_TASKS_JSONL_BYTES)}. Import a sample of the rows or drop columns the scenario does not use.`,
    };
  }
  return { ok: true, text, bytes };
}

/**
 * Where a diagnostic at a line of the candidate tasks.jsonl comes from in the upload: toTasksJsonl writes
 * one line per row, in order, so line n is rows[n - 1]. Null for diagnostics about the whole file.
 */
export function sourceOf(d: Pick<Diagnostic, "file" | "line" | "message">, rows: readonly SplitRow[], fileName: string): string | null {
  if (d.file !== TASKS_FILE || !/ line \d+/.test(d.message)) return null;
  const r = rows[d.line - 1];
  if (!r) return null;
  return `${fileName} row ${r.row}${r.line !== undefined && r.line !== r.row ? ` (line ${r.line})` : ""}`;
}

/**
 * What the runner's check of the candidate files means for the import: row errors (tasks.jsonl) refuse
 * it; errors elsewhere mean the rows could not be checked against taskSchema at all (the runner stops
 * before loading a scenario that does not compile, or with a bad config), which refuses it too.
 */
export function importVerdict(diagnostics: readonly Diagnostic[]): { ok: true } | { ok: false; rows: Diagnostic[]; other: Diagnostic[] } {
  const errors = diagnostics.filter((d) => d.severity !== "warning");
  if (errors.length === 0) return { ok: true };
  return { ok: false, rows: errors.filter((d) => d.file === TASKS_FILE), other: errors.filter((d) => d.file !== TASKS_FILE) };
}
