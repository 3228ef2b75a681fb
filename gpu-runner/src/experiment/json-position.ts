/**
 * Positions for JSON problems. V8's JSON.parse says "at position N" (or nothing, at end of input); the
 * editor wants a line and column. For config fields, the key's position is found with TypeScript's JSON
 * parser, which keeps offsets (JSON.parse throws them away).
 */
import ts from "typescript";

export interface Position {
  line: number;
  column: number;
}

/** 1-based line/column of a 0-based offset in text. */
export function offsetToPosition(text: string, offset: number): Position {
  const clamped = Math.max(0, Math.min(offset, text.length));
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < clamped; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: clamped - lineStart + 1 };
}

/** Where a JSON.parse error points: its "position N", the end of input, or the start. */
export function jsonErrorOffset(text: string, err: unknown): number {
  const message = err instanceof Error ? err.message : String(err);
  const m = /position (\d+)/.exec(message);
  if (m?.[1]) return Number(m[1]);
  if (/end of (JSON )?input/i.test(message)) return text.trimEnd().length;
  return 0;
}

/**
 * Offset of the deepest key along `path` that exists in the JSON text (e.g. ["trainer", "learning_rate"]),
 * or undefined when not even the first key is there (a default was used, or the text is not an object).
 */
export function findKeyOffset(text: string, path: readonly (string | number)[]): number | undefined {
  const sf = ts.parseJsonText("config.json", text);
  const first = sf.statements[0];
  let node: ts.Expression | undefined = first?.expression;
  let found: number | undefined;
  for (const key of path) {
    if (!node) break;
    if (ts.isObjectLiteralExpression(node)) {
      const prop = node.properties.find(
        (p): p is ts.PropertyAssignment =>
          ts.isPropertyAssignment(p) && (ts.isStringLiteral(p.name) || ts.isIdentifier(p.name)) && p.name.text === String(key),
      );
      if (!prop) break;
      found = prop.name.getStart(sf);
      node = prop.initializer;
    } else if (ts.isArrayLiteralExpression(node) && typeof key === "number") {
      const el = node.elements[key];
      if (!el) break;
      found = el.getStart(sf);
      node = el;
    } else break;
  }
  return found;
}
