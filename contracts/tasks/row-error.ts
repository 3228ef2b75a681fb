/**
 * The one error shape of a task set: the tasks.jsonl parser, every upload format, the train/validation
 * split and (later) the scenario's schema check all report a RowError, so every one of them reads the same
 * ("tasks.jsonl line 5031, field "answer": expected number, got string") and lands on the same editor line.
 */
import { z } from "zod";
import { type Node as JsonNode, findNodeAtLocation, parseTree } from "jsonc-parser";
import type { Diagnostic } from "../run";
import { MAX_REPORTED_ERRORS } from "./limits";

export const RowError = z.object({
  row: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("1-based data row: header, blank lines and the lines of a multi-line field are not counted. Absent when the error is about the whole file."),
  line: z.number().int().min(1).optional().describe("1-based line where the row starts, for text formats."),
  column: z.number().int().min(1).optional().describe("1-based column within the line (UTF-16 units, as the editor counts)."),
  field: z.string().optional().describe('The field at fault, as a path: "answer", "messages[0].content".'),
  message: z.string().describe("What is wrong, without the location (formatRowError adds it)."),
});
export type RowError = z.infer<typeof RowError>;

/**
 * "tasks.jsonl line 5031, field "answer": expected number, got string". The line is named when there is
 * one (that is where the editor jumps); the row is added only when it differs from the line (a CSV header,
 * blank lines, multi-line fields), and stands alone for formats without lines (Parquet).
 */
export function formatRowError(err: RowError, file: string): string {
  const { row, line, field, message } = err;
  const where =
    line !== undefined && row !== undefined && row !== line
      ? ` row ${row} (line ${line})`
      : line !== undefined
        ? ` line ${line}`
        : row !== undefined
          ? ` row ${row}`
          : "";
  return `${file}${where}${field !== undefined ? `, field ${JSON.stringify(field)}` : ""}: ${message}`;
}

/** The editor's marker for a row error; errors about the whole file sit at line 1, column 1. */
export function rowErrorToDiagnostic(err: RowError, file: string, severity: Diagnostic["severity"] = "error"): Diagnostic {
  return { file, line: err.line ?? 1, column: err.column ?? 1, message: formatRowError(err, file), severity };
}

/**
 * Collects errors but keeps only the first `max`, then one entry at the first left-out error saying how
 * many more there are: a 10,000-bad-line file gives 51 markers, not 10,000. `full` lets a caller skip
 * work (finding a column) for errors that will only be counted.
 */
export class RowErrorList {
  private readonly kept: RowError[] = [];
  private firstLeftOut: RowError | undefined;
  private leftOut = 0;

  constructor(private readonly max = MAX_REPORTED_ERRORS) {}

  add(err: RowError): void {
    if (this.kept.length < this.max) {
      this.kept.push(err);
      return;
    }
    this.firstLeftOut ??= err;
    this.leftOut++;
  }

  get count(): number {
    return this.kept.length + this.leftOut;
  }

  get full(): boolean {
    return this.kept.length >= this.max;
  }

  /** The kept errors, plus the summary entry when some were left out. */
  list(): RowError[] {
    if (!this.firstLeftOut) return [...this.kept];
    const { row, line } = this.firstLeftOut;
    const more = this.leftOut.toLocaleString("en-US");
    return [
      ...this.kept,
      {
        ...(row !== undefined ? { row } : {}),
        ...(line !== undefined ? { line } : {}),
        message: `${more} more error${this.leftOut === 1 ? "" : "s"} from here on, not listed (only the first ${this.max} are); fix these and check again`,
      },
    ];
  }
}

/** The first `max` errors plus a summary of the rest, for a list built elsewhere. */
export function capRowErrors(errors: readonly RowError[], max = MAX_REPORTED_ERRORS): RowError[] {
  const list = new RowErrorList(max);
  for (const e of errors) list.add(e);
  return list.list();
}

/** ["messages", 0, "content"] → "messages[0].content"; odd keys are quoted: ["a b"] → '["a b"]'. */
export function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else {
      const name = typeof key === "symbol" ? (key.description ?? "") : key;
      out += /^[A-Za-z_$][\w$]*$/.test(name) ? (out === "" ? name : `.${name}`) : `[${JSON.stringify(name)}]`;
    }
  }
  return out;
}

/**
 * 1-based column of a field in one JSON line: its key (or array element), or the nearest enclosing one
 * that exists when the field itself is missing; undefined when the line is not JSON or has none of it.
 */
export function fieldColumn(lineText: string, path: readonly PropertyKey[]): number | undefined {
  const root = parseTree(lineText);
  if (!root) return undefined;
  const segments = path.filter((k): k is string | number => typeof k !== "symbol");
  for (let n = segments.length; n > 0; n--) {
    const node: JsonNode | undefined = findNodeAtLocation(root, segments.slice(0, n));
    if (!node) continue;
    // An object member's value node has the property node as parent, whose first child is the key.
    const at = node.parent?.type === "property" ? (node.parent.children?.[0] ?? node) : node;
    return at.offset + 1;
  }
  return undefined;
}

/** One issue from a schema check (zod's `issues`, also after crossing the sandbox as plain data). */
export interface RowIssue {
  path: readonly PropertyKey[];
  message: string;
}

/**
 * A row's schema issues as row errors, for the scenario's zod check: pass the row's line text to get each
 * field's column, so the editor marker sits on the key rather than at the start of the line.
 */
export function rowErrorsFromIssues(
  at: { row?: number; line?: number; lineText?: string },
  issues: readonly RowIssue[],
): RowError[] {
  return issues.map((issue) => {
    const column = at.lineText !== undefined ? fieldColumn(at.lineText, issue.path) : undefined;
    return {
      ...(at.row !== undefined ? { row: at.row } : {}),
      ...(at.line !== undefined ? { line: at.line } : {}),
      ...(column !== undefined ? { column } : {}),
      ...(issue.path.length > 0 ? { field: fieldPath(issue.path) } : {}),
      message: issue.message,
    };
  });
}
