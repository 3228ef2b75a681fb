/**
 * How deep user JSON may nest, checked on the text before anything parses it. JSON.parse itself copes
 * with any depth, but most of what touches the value next is recursive — zod, JSON.stringify, structured
 * clone into a sandbox, jsonc-parser's tree, superjson's walk of its meta — and a value nested 100,000
 * deep overflows the stack there ("Maximum call stack size exceeded": a 500, or a run that passed Check
 * failing later). Real configs, task rows and API bodies nest a handful of levels; 64 is far past any of
 * them and far below any stack.
 *
 * Written by hand rather than taken from a library: it is one pass over the text that only follows
 * strings and brackets (no parsing), so it runs on partial input (a request body as it streams) and on
 * UTF-8 bytes as well as on text — every character it looks at is ASCII, which UTF-8 never uses inside a
 * multi-byte character.
 */

/** The deepest nesting of arrays and objects accepted in any user JSON (files, task rows, request bodies). */
export const MAX_JSON_DEPTH = 64;

/** "nested deeper than 64 levels": the words every refusal uses, after its file and line. */
export function nestedTooDeepMessage(max = MAX_JSON_DEPTH): string {
  return `nested deeper than ${max} levels`;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Follows nesting over text fed in pieces (strings or UTF-8 bytes). `feed` returns the offset, counted
 * over everything fed so far, of the first bracket that goes past `max`, or -1 while within it.
 */
export class JsonDepthScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private offset = 0;

  constructor(readonly max = MAX_JSON_DEPTH) {}

  feed(chunk: string | Uint8Array): number {
    const text = typeof chunk === "string";
    const n = chunk.length;
    for (let i = 0; i < n; i++) {
      const c = text ? chunk.charCodeAt(i) : chunk[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === BACKSLASH) this.escaped = true;
        else if (c === QUOTE) this.inString = false;
      } else if (c === QUOTE) this.inString = true;
      else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
        if (++this.depth > this.max) return this.offset + i;
      } else if ((c === CLOSE_ARRAY || c === CLOSE_OBJECT) && this.depth > 0) this.depth--;
    }
    this.offset += n;
    return -1;
  }
}

/** The 0-based offset of the bracket where `text` first nests deeper than `max`, or null when it never does. */
export function jsonTooDeepAt(text: string, max = MAX_JSON_DEPTH): number | null {
  const at = new JsonDepthScanner(max).feed(text);
  return at < 0 ? null : at;
}

/**
 * True when an already parsed value nests deeper than `max` (arrays and plain objects), found without
 * recursion: for values that arrive parsed (a tRPC input) before anything recursive walks them.
 */
export function valueTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const v of level) {
      if (v === null || typeof v !== "object") continue;
      if (depth >= max) return true;
      for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === "object") next.push(child);
    }
    level = next;
  }
  return false;
}
