/**
 * Positions for JSON problems, for the editor's markers: where a syntax error is, and where a config key
 * is. JSON.parse keeps no offsets, so jsonc-parser (VS Code's own JSON scanner, small and browser-safe)
 * finds them; JSON.parse still decides validity and words the message users know.
 */
import { parse as parseJsonc, parseTree, type Node, type ParseError } from "jsonc-parser";
import { jsonTooDeepAt, nestedTooDeepMessage } from "../json-depth";

export interface Position {
  line: number;
  column: number;
}

/** 1-based line/column of a 0-based offset in text. */
export function offsetToPosition(text: string, offset: number): Position {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < clamped; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: clamped - lineStart + 1 };
}

const STRICT = { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false } as const;

/** Offset of the first syntax error in a JSON text (0 when none is found). */
export function jsonErrorOffset(text: string): number {
  const errors: ParseError[] = [];
  parseJsonc(text, errors, STRICT);
  return errors[0]?.offset ?? 0;
}

export type JsonParseResult =
  | { ok: true; value: unknown }
  /** `tooDeep`: valid or not, the text nests deeper than MAX_JSON_DEPTH (`offset`: the bracket past it). */
  | { ok: false; message: string; offset: number; tooDeep?: true };

/**
 * JSON.parse with the position of the error when it fails. Nesting is checked first: what reads the value
 * next (zod, jsonc-parser's tree for positions) recurses, and would overflow the stack on a deep one.
 */
export function parseJson(text: string): JsonParseResult {
  const deep = jsonTooDeepAt(text);
  if (deep !== null) return { ok: false, message: nestedTooDeepMessage(), offset: deep, tooDeep: true };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    // V8 appends "in JSON at position N (line L column C)"; the position is shown by the marker instead.
    const message = (err instanceof Error ? err.message : String(err)).replace(/\s*(in JSON )?at position \d+.*$/, "");
    return { ok: false, message, offset: jsonErrorOffset(text) };
  }
}

function child(node: Node, key: string | number): { keyOffset: number; value: Node } | undefined {
  if (node.type === "object" && node.children) {
    for (const prop of node.children) {
      const [name, value] = prop.children ?? [];
      if (name && value && name.value === String(key)) return { keyOffset: name.offset, value };
    }
  } else if (node.type === "array" && typeof key === "number" && node.children?.[key]) {
    const el = node.children[key];
    return { keyOffset: el.offset, value: el };
  }
  return undefined;
}

/**
 * Offset of the deepest key along `path` that exists in the JSON text (e.g. ["trainer", "learning_rate"]),
 * or undefined when not even the first key is there (a default was used, or the text is not an object).
 */
export function findKeyOffset(text: string, path: readonly (string | number)[]): number | undefined {
  // jsonc-parser builds its tree recursively: a text too deep for that has no key positions to give.
  if (jsonTooDeepAt(text) !== null) return undefined;
  let node = parseTree(text, [], STRICT);
  let found: number | undefined;
  for (const key of path) {
    if (!node) break;
    const next = child(node, key);
    if (!next) break;
    found = next.keyOffset;
    node = next.value;
  }
  return found;
}
