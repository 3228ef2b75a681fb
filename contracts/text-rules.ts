/**
 * What text users may send, in one place. Postgres text and jsonb cannot hold U+0000, so a NUL that got
 * through was a 500 naming nothing; control characters in a name or a tag print as nothing (or as terminal
 * escapes in a CSV export opened in a shell) and make one thing look like another. The rule:
 *
 *   everywhere        (every string of every tRPC input and auth body, file contents included): no NUL
 *   multi-line text   (notes, descriptions): no control characters except tab, line feed and carriage return
 *   one-line fields   (names, tags, emails, runner names, URLs): no control characters at all (U+0000–U+001F,
 *                     U+007F) — a line break in a one-line field is what log and header injection use — and no
 *                     bidirectional overrides or isolates (U+202A–U+202E, U+2066–U+2069: "Trojan Source", a name
 *                     that displays as another; CVE-2021-42574) nor line or paragraph separators (U+2028, U+2029:
 *                     line breaks to JavaScript, editors and many log viewers)
 *
 * Experiment file names are held to a stricter pattern of their own (contracts/experiment/files.ts).
 * Imports zod only: the browser bundles it (runs-table-query.ts).
 */
import type { z } from "zod";

export type TextKind = "any" | "text" | "line";

/** Shown after the field's path: "name: contains a NUL character (\u0000)". */
export const NUL_MESSAGE = "contains a NUL character (\\u0000)";

// eslint-disable-next-line no-control-regex -- control characters are what these look for
const CONTROL_IN_LINE = /[\u0000-\u001f\u007f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
// eslint-disable-next-line no-control-regex -- the same, less tab, line feed and carriage return
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** "U+001B". */
function codePoint(ch: string): string {
  return `U+${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** What a refused character is, in the words of the message. */
function kindOfCharacter(ch: string): string {
  if (ch === "\u2028" || ch === "\u2029") return "a line or paragraph separator";
  if (ch >= "\u202a" && ch <= "\u2069") return "a bidirectional control character";
  return "a control character";
}

/** Why `text` may not be stored as `kind`, or null when it may. */
export function textProblem(text: string, kind: TextKind): string | null {
  if (text.includes("\u0000")) return NUL_MESSAGE;
  if (kind === "any") return null;
  const found = (kind === "line" ? CONTROL_IN_LINE : CONTROL_IN_TEXT).exec(text);
  if (!found) return null;
  const rule = kind === "line" ? "one line of plain text, no control characters" : "text may hold tabs and line breaks, no other control characters";
  return `contains ${kindOfCharacter(found[0])} (${codePoint(found[0])}): ${rule}`;
}

/** A one-line field (names, tags, emails, URLs). The message is prefixed with the field's path by the caller. */
export function oneLine<T extends z.ZodType<string>>(schema: T): T {
  return schema.superRefine((v, ctx) => {
    const problem = textProblem(v, "line");
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }) as T;
}

/** A field of several lines (notes, descriptions). */
export function multiLine<T extends z.ZodType<string>>(schema: T): T {
  return schema.superRefine((v, ctx) => {
    const problem = textProblem(v, "text");
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }) as T;
}

export type TextPath = readonly (string | number)[];

/** A key as a message prints it: its control characters (the one being reported, perhaps) escaped, `\u0000`. */
export function escapeKey(key: string | number): string {
  // eslint-disable-next-line no-control-regex -- a key may itself hold the character being reported
  return String(key).replace(/[\u0000-\u001f\u007f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** "files.lib/a.ts", "tags.1": a path as the API's input issues print it, control characters escaped. */
export function formatTextPath(path: TextPath): string {
  return path.map(escapeKey).join(".");
}

/** A path as a chain back to the root: built once per node, turned into an array only for the report. */
interface PathNode {
  key: string | number;
  parent: PathNode | null;
}

function pathOf(node: PathNode | null): TextPath {
  const out: (string | number)[] = [];
  for (let n = node; n; n = n.parent) out.push(n.key);
  return out.reverse();
}

/** A string that breaks its rule: where (the key itself when `problem` starts "the key") and why. */
export interface TextIssue {
  path: TextPath;
  problem: string;
}

/**
 * The first string (value or key) in a parsed value that breaks its rule, or null. `kindAt` picks the rule
 * for a string by its path (default: "any" everywhere; then paths are never built for strings that pass).
 * Walks with a stack of its own, not recursion, so no depth can overflow it.
 */
export function findTextIssue(value: unknown, kindAt?: (path: TextPath) => TextKind): TextIssue | null {
  const stack: { value: unknown; at: PathNode | null }[] = [{ value, at: null }];
  while (stack.length > 0) {
    const { value: v, at } = stack.pop()!;
    if (typeof v === "string") {
      const problem = textProblem(v, kindAt ? kindAt(pathOf(at)) : "any");
      if (problem) return { path: pathOf(at), problem };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], at: { key: i, parent: at } });
    } else if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        const node = { key, parent: at };
        if (key.includes("\u0000")) return { path: pathOf(node), problem: `the key ${NUL_MESSAGE}` };
        stack.push({ value: child, at: node });
      }
    }
  }
  return null;
}

/** findTextIssue as "path: problem" (paths as the API's input issues print them), or null. */
export function findTextProblem(value: unknown, kindAt?: (path: TextPath) => TextKind): string | null {
  const issue = findTextIssue(value, kindAt);
  return issue ? `${formatTextPath(issue.path) || "(input)"}: ${issue.problem}` : null;
}

/**
 * A NUL in an address: the decoded path (a run id in /api/export/runs/<id>/…) or a query parameter
 * (?tag=…), as "path: …" or "tag: …". Plain HTTP routes pass both on to queries, which Postgres refuses.
 */
export function urlTextProblem(url: URL): string | null {
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Not percent-encoded text: Next answers such a path itself.
  }
  if (path.includes("\u0000")) return `path: ${NUL_MESSAGE}`;
  for (const [key, value] of url.searchParams) {
    if (key.includes("\u0000") || value.includes("\u0000")) return `${formatTextPath([key])}: ${NUL_MESSAGE}`;
  }
  return null;
}
