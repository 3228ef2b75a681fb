/**
 * extractAnswer: the final answer of a model's worked solution, as a string for parseMathValue or
 * mathEqual. In order of trust: the last \boxed{} / \fbox{}; the text after the last "answer is",
 * "Answer:", "Final answer:" or GSM8K's "####"; the right-hand side of an "=" on the last line; the last
 * number. Only the tail of a very long reply is read, and every step is one linear scan.
 */
import { boxedArgument } from "./latex";
import { trimChars } from "./text";

/** Replies longer than this are read from their last MAX_SCAN_CHARS characters (the answer is at the end). */
export const MAX_SCAN_CHARS = 100_000;
/** An extracted answer longer than this is cut (a real answer is far shorter). */
const MAX_ANSWER_CHARS = 1_000;
/** How many trailing \boxed{} to look through for a non-empty one. */
const MAX_BOXES = 8;

/**
 * The final answer of a worked solution, as text (pass it to mathEqual or parseMathValue). In order:
 * the content of the last non-empty `\boxed{…}` / `\fbox{…}` / `\boxed 5` (braces balanced); the
 * rest of the sentence after the last "answer is", "Answer:", "Final answer:" or "####"; the right-hand
 * side of an `=` on the last line; else the last number (times, dates, ranges, versions and digits in
 * names such as GPT-4 skipped). Null when there is none, or when the last `\boxed{` was never closed:
 * the reply was cut off mid-answer, and an earlier number would be a guess.
 *
 * @example extractAnswer("… so she pays $\\boxed{18}$ dollars.") // "18"
 * @example extractAnswer("3 + 4 = 7. The answer is 7 apples.") // "7 apples"
 */
export function extractAnswer(text: string): string | null {
  if (typeof text !== "string") return null;
  const s = text.length > MAX_SCAN_CHARS ? text.slice(-MAX_SCAN_CHARS) : text;
  const boxed = lastBoxed(s);
  if (boxed !== undefined) return boxed;
  return afterLastMarker(s) ?? afterEquals(s) ?? lastNumber(s);
}

function cap(answer: string): string | null {
  const t = trimChars(answer, " \t\r\n*_", " \t\r\n*_.,;:!?");
  return t === "" ? null : t.slice(0, MAX_ANSWER_CHARS);
}

/** The content of the last non-empty box; null when the last box is unclosed; undefined when none. */
function lastBoxed(s: string): string | null | undefined {
  let from = s.length;
  for (let k = 0; k < MAX_BOXES && from > 0; k++) {
    const b = s.lastIndexOf("\\boxed", from - 1);
    const f = s.lastIndexOf("\\fbox", from - 1);
    const at = Math.max(b, f);
    if (at < 0) return undefined;
    from = at;
    const arg = boxedArgument(s, at + (at === b ? "\\boxed".length : "\\fbox".length));
    if (arg === null) return k === 0 ? null : undefined;
    const content = arg?.content.trim();
    if (content) return content.slice(0, MAX_ANSWER_CHARS);
  }
  return undefined;
}

// "answer is", "Answer:", "**Final Answer:**", "answer =", and GSM8K's "####"; not "To answer: …",
// which opens a solution rather than ending it.
const MARKER = /(?<!\p{L})(?<!\bto\s)answer[*_ \t]*(?:is\b[*_ \t:]*|[:=][*_ \t]*)|####[ \t]*/giu;

/** The answer after the last marker: the rest of its line (or the next line when that is empty). */
function afterLastMarker(s: string): string | null {
  let last: RegExpExecArray | null = null;
  MARKER.lastIndex = 0;
  for (let m = MARKER.exec(s); m; m = MARKER.exec(s)) last = m;
  if (!last) return null;
  // The answer may sit on the next line ("Answer:\n42"); look a little way past blank space for it.
  const markerEnd = last.index + last[0].length;
  let start = markerEnd;
  while (start < s.length && start - markerEnd < 200 && /\s/.test(s[start] as string)) start++;
  return cap(firstSentence(lineAt(s, start).trim()));
}

/** The line of `s` from `start` to the next newline. */
function lineAt(s: string, start: number): string {
  const nl = s.indexOf("\n", start);
  return s.slice(start, nl < 0 ? s.length : nl);
}

/** The right-hand side of the last "=" on the last non-empty line ("So 3 + 4 = 7."). */
function afterEquals(s: string): string | null {
  const t = s.trimEnd();
  const line = t.slice(t.lastIndexOf("\n") + 1);
  const eq = line.lastIndexOf("=");
  if (eq < 0) return null;
  const before = line[eq - 1];
  if (before === "<" || before === ">" || before === "!" || before === "=") return null;
  return cap(firstSentence(line.slice(eq + 1).trim()));
}

/**
 * The answer's own text when a sentence goes on after it: a math span ($…$, \(…\)) whole, else up to
 * a full stop, semicolon, "!" or "?" followed by a space, or a comma followed by a word.
 */
function firstSentence(t: string): string {
  for (const [open, close] of [["$$", "$$"], ["\\(", "\\)"], ["\\[", "\\]"], ["$", "$"]] as const) {
    if (!t.startsWith(open)) continue;
    const end = t.indexOf(close, open.length);
    if (end <= open.length) break;
    const span = t.slice(0, end + close.length);
    // "$18 a week, and $20 …": a "$" before a digit with words after it is a currency sign, not math.
    if (open === "$" && isDigit(t[1]) && span.includes(" ")) break;
    return span;
  }
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    const next = t[i + 1];
    if ((c === "." || c === ";" || c === "!" || c === "?") && (next === undefined || next === " ")) return t.slice(0, i);
    if (c === "," && next === " " && /\p{L}/u.test(t[i + 2] ?? "")) return t.slice(0, i);
  }
  return t;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

function isLetter(c: string | undefined): boolean {
  return c !== undefined && /\p{L}/u.test(c);
}

const FRAC_AT = /\\[dt]?frac\s*\{\s*(-?\d{1,100})\s*\}\s*\{\s*(-?\d{1,100})\s*\}/y;
const THOUSANDS = /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;

/**
 * The last number in `s`, as written (sign and thousands commas kept). Skipped: times (3:30), dates and
 * ranges (2024-01-05, 3-5, 12/25/2024), versions (1.2.3), digits inside names (x2, H2O, GPT-4, x^2).
 */
function lastNumber(s: string): string | null {
  let best: string | null = null;
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === "\\") {
      FRAC_AT.lastIndex = i;
      const m = FRAC_AT.exec(s);
      if (m) {
        best = `${m[1]}/${m[2]}`;
        i = FRAC_AT.lastIndex;
        continue;
      }
      i++;
      continue;
    }
    if (!isDigit(c) && !(c === "." && isDigit(s[i + 1]) && !isDigit(s[i - 1]))) {
      i++;
      continue;
    }
    const start = i;
    // Digits with single separators between digits: 1,234.5 · 3:30 · 2024-01-05 · 1/2.
    let j = i;
    while (j < s.length) {
      if (isDigit(s[j])) j++;
      else if (".,/:-".includes(s[j] as string) && isDigit(s[j + 1])) j++;
      else break;
    }
    // Scientific notation glued to the digits: 6.02e23, 1e-9.
    const e = /^[eE][-+]?\d{1,6}(?!\p{L})/u.exec(s.slice(j, j + 9));
    if (e) j += e[0].length;
    if (s[j] === "%") j++; // "50%" is not 50
    i = j;
    const token = s.slice(start, j);
    const before = s[start - 1];
    if (isLetter(before) || before === "^" || before === "_") continue;
    if ((before === "-" || before === "\u2212") && isLetter(s[start - 2])) continue;
    const value = classify(token);
    if (value === null) continue;
    const negative = (before === "-" || before === "\u2212") && !/[\p{L}\p{N})\]]/u.test(s[start - 2] ?? "");
    best = negative ? `-${value}` : value;
  }
  return best;
}

function classify(token: string): string | null {
  const mantissa = token.replace(/[eE][-+]?\d+%?$/, "").replace(/%$/, "");
  if (mantissa.includes(":") || mantissa.includes("-")) return null;
  if (mantissa.split("/").length > 2 || mantissa.split(".").length > 2) return null;
  if (mantissa.includes(",") && !THOUSANDS.test(mantissa)) return null;
  if (mantissa.includes("/") && mantissa.includes(".")) return null;
  return token;
}
