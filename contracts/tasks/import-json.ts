/**
 * .json → rows. Accepted shapes: an array of objects (pandas `to_json(orient="records")`), or an object
 * whose "data" is that array (the SQuAD-style layout Hugging Face's json loader reads with field="data").
 * A .json file that is really JSON Lines (Hugging Face `Dataset.to_json` writes lines by default) is read
 * as JSON Lines.
 */
import { type Node as JsonNode, parseTree } from "jsonc-parser";
import { MAX_TASK_ROWS, tooManyRowsMessage } from "./limits";
import { type RowErrorList } from "./row-error";
import { describeJsonType, isPlainObject, jsonSyntaxError, offsetToLineColumn } from "./json-syntax";
import { parseJsonLines, splitLines } from "./json-lines";
import { jsonTooDeepAt, nestedTooDeepMessage } from "../json-depth";
import type { ImportedRow, TaskFileFormat } from "./import-types";

/** True when the first non-blank line is a whole JSON object on its own and more lines follow. */
function looksLikeJsonLines(text: string): boolean {
  const lines = splitLines(text).filter((l) => l.trim() !== "");
  if (lines.length < 2) return false;
  try {
    return isPlainObject(JSON.parse(lines[0] as string));
  } catch {
    return false;
  }
}

/** Line of each element of the row array, found only when an error needs one (a second, slower parse). */
function elementLines(text: string, inData: boolean): (index: number) => number | undefined {
  let nodes: JsonNode[] | undefined;
  return (index) => {
    if (!nodes) {
      const root = parseTree(text);
      const array = inData ? root?.children?.find((p) => p.children?.[0]?.value === "data")?.children?.[1] : root;
      nodes = array?.children ?? [];
    }
    const node = nodes[index];
    return node ? offsetToLineColumn(text, node.offset).line : undefined;
  };
}

export function importJson(text: string, errors: RowErrorList): { format: TaskFileFormat; rows: ImportedRow[] } {
  // Checked before anything parses it (see json-depth.ts); the line is named either way (JSON Lines or not).
  const deep = jsonTooDeepAt(text);
  if (deep !== null) {
    errors.add({ ...offsetToLineColumn(text, deep), message: nestedTooDeepMessage() });
    return { format: looksLikeJsonLines(text) ? "jsonl" : "json", rows: [] };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (thrown) {
    if (looksLikeJsonLines(text)) return { format: "jsonl", rows: parseJsonLines(text, errors, { withRow: true }) };
    const syntax = jsonSyntaxError(text, thrown);
    errors.add({ ...offsetToLineColumn(text, syntax.offset), message: syntax.message });
    return { format: "json", rows: [] };
  }

  const inData = isPlainObject(value) && Array.isArray(value.data);
  const items = Array.isArray(value) ? value : inData ? ((value as { data: unknown[] }).data) : undefined;
  if (!items) {
    errors.add({
      message: `expected an array of task objects, or an object whose "data" is one; the file holds ${describeJsonType(value)}`,
    });
    return { format: "json", rows: [] };
  }
  if (items.length > MAX_TASK_ROWS) {
    errors.add({ message: tooManyRowsMessage(items.length) });
    return { format: "json", rows: [] };
  }

  const lineOf = elementLines(text, inData);
  const rows: ImportedRow[] = [];
  items.forEach((item, i) => {
    if (isPlainObject(item)) {
      rows.push({ row: i + 1, data: item });
      return;
    }
    const line = errors.full ? undefined : lineOf(i);
    errors.add({
      row: i + 1,
      ...(line !== undefined ? { line } : {}),
      message: `each row must be a JSON object, got ${describeJsonType(item)}`,
    });
  });
  return { format: "json", rows };
}
