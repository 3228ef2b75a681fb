/**
 * JSON Lines → one object per non-blank line, with its line number. Shared by the tasks.jsonl parser and
 * the .jsonl upload so both accept and reject exactly the same text. JSON strings cannot hold a raw
 * newline, so splitting on "\n" first is safe, and each line parses on its own: one bad line does not hide
 * the rest, and every bad line is reported (up to the error list's cap).
 */
import { MAX_TASK_ROWS, tooManyRowsMessage } from "./limits";
import { type RowErrorList } from "./row-error";
import { describeJsonType, isPlainObject, jsonSyntaxError } from "./json-syntax";
import { jsonTooDeepAt, nestedTooDeepMessage } from "../json-depth";

export interface JsonLineRow {
  /** 1-based among non-blank lines. */
  row: number;
  /** 1-based line in the file. */
  line: number;
  data: Record<string, unknown>;
}

export interface JsonLinesOptions {
  /** Put the row number in errors too (uploads); tasks.jsonl errors name the line alone. */
  withRow: boolean;
  /** A further check of each object, reported in line order with the syntax errors (so the cap keeps the first ones). */
  check?: (data: Record<string, unknown>) => { field?: string; message: string } | undefined;
}

/** Splits text (BOM already removed) into lines; "\r\n" and "\n" both end a line. */
export function splitLines(text: string): string[] {
  return text.split(/\r?\n/);
}

function isBlank(line: string): boolean {
  return line.trim() === "";
}

/**
 * The rows of a JSON Lines text. Problems go to `errors`; the rows returned are only meaningful when no
 * error was added (callers return either all rows or the errors, never both).
 */
export function parseJsonLines(text: string, errors: RowErrorList, options: JsonLinesOptions): JsonLineRow[] {
  const lines = splitLines(text);
  let nonBlank = 0;
  for (const l of lines) if (!isBlank(l)) nonBlank++;
  if (nonBlank > MAX_TASK_ROWS) {
    // Checked before parsing: no point reporting the syntax of rows that cannot be kept anyway.
    errors.add({ message: tooManyRowsMessage(nonBlank) });
    return [];
  }

  const rows: JsonLineRow[] = [];
  let row = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    if (isBlank(raw)) continue;
    row++;
    const at = options.withRow ? { row, line: i + 1 } : { line: i + 1 };
    // Before parsing: a row that parses fine at any depth later overflows the stack wherever it is walked
    // (copied into the sandbox, stringified into an event), after Check has passed.
    const deep = jsonTooDeepAt(raw);
    if (deep !== null) {
      errors.add({ ...at, column: deep + 1, message: nestedTooDeepMessage() });
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (thrown) {
      if (errors.full) {
        errors.add({ ...at, message: "invalid JSON" }); // only counted: skip locating it
        continue;
      }
      const syntax = jsonSyntaxError(raw, thrown);
      errors.add({ ...at, column: syntax.offset + 1, message: syntax.message });
      continue;
    }
    if (!isPlainObject(value)) {
      errors.add({ ...at, message: `each line must be a JSON object, got ${describeJsonType(value)}` });
      continue;
    }
    const problem = options.check?.(value);
    if (problem) {
      errors.add({ ...at, ...problem });
      continue;
    }
    rows.push({ row, line: i + 1, data: value });
  }
  return rows;
}
