/**
 * LaTeX clean-up for answers: the noise a model wraps around a value ($…$, \left( … \right), \text{cm},
 * \dfrac, \!, ^\circ) removed or rewritten to one spelling, so the number parser sees `\frac{1}{2} cm`
 * rather than `$\left(\dfrac{1}{2}\right)\,\text{cm}$`. Every function here is one linear pass (or a
 * bounded number of them); nothing backtracks.
 */

/**
 * Index of the `}` closing the `{` at `open`, or -1 when it is not closed within `limit` characters.
 * Escaped braces (`\{`, `\}`) do not count.
 */
export function matchBrace(s: string, open: number, limit = Infinity): number {
  let depth = 0;
  const end = Math.min(s.length, open + limit);
  for (let i = open; i < end; i++) {
    const c = s[i];
    if (c === "\\") {
      i++; // skip the escaped character
    } else if (c === "{") {
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

// Commands whose argument is kept as plain text: `\text{ cm}` → ` cm `, `\mathbf{5}` → ` 5 `.
const UNWRAP = [
  "text", "textbf", "textit", "textrm", "texttt", "textnormal", "mathrm", "mathbf", "mathit", "mathsf",
  "mathtt", "mathnormal", "operatorname", "mbox", "hbox", "boldsymbol", "displaystyle",
];
const UNWRAP_RE = new RegExp(`\\\\(?:${UNWRAP.join("|")})\\s*\\{`, "g");

/** Replaces `\text{X}` (and the other UNWRAP commands) with ` X `, nested ones included. */
export function unwrapTextCommands(s: string): string {
  // Each pass removes the outermost layer of each command; 4 passes cover any sane nesting, and an
  // unclosed command is left as it is (the parser then rejects the backslash).
  for (let pass = 0; pass < 4; pass++) {
    UNWRAP_RE.lastIndex = 0;
    if (!UNWRAP_RE.test(s)) break;
    let out = "";
    let from = 0;
    UNWRAP_RE.lastIndex = 0;
    for (let m = UNWRAP_RE.exec(s); m; m = UNWRAP_RE.exec(s)) {
      const open = m.index + m[0].length - 1;
      const close = matchBrace(s, open);
      if (close < 0) break;
      out += `${s.slice(from, m.index)} ${s.slice(open + 1, close)} `;
      from = close + 1;
      UNWRAP_RE.lastIndex = from;
    }
    out += s.slice(from);
    if (out === s) break;
    s = out;
  }
  return s;
}

// Literal rewrites, applied in order. Longer spellings come before their prefixes (\dfrac before \frac).
const REWRITES: ReadonlyArray<readonly [string, string]> = [
  ["\\dfrac", "\\frac"],
  ["\\tfrac", "\\frac"],
  ["\\cfrac", "\\frac"],
  ["{,}", ","], // 1{,}234: the LaTeX way to write a thousands comma
  ["\\!", ""],
  ["\\,", " "],
  ["\\;", " "],
  ["\\:", " "],
  ["\\ ", " "],
  ["\\qquad", " "],
  ["\\quad", " "],
  ["~", " "],
  ["\\left", ""],
  ["\\right", ""],
  ["\\bigl", ""],
  ["\\bigr", ""],
  ["\\Bigl", ""],
  ["\\Bigr", ""],
  ["\\%", "%"],
  ["\\$", "$"],
  ["\\euro", "€"],
  ["\\pounds", "£"],
  ["^{\\circ}", " "],
  ["^\\circ", " "],
  ["\\circ", " "],
  ["\\degree", " "],
  ["°", " "],
  ["\\times", "×"],
  ["\\cdot", "×"],
  ["·", "×"],
  ["\u2212", "-"], // minus sign
  ["\u00a0", " "], // no-break space
  ["\u2009", " "], // thin space
  ["\u202f", " "], // narrow no-break space
  ["\u2007", " "], // figure space
];

/**
 * One spelling for the LaTeX and Unicode variants of the same answer, whitespace collapsed. Math
 * delimiters ($…$) are not touched here: a `$` may also be a currency sign, which the caller decides.
 */
export function normalizeLatex(s: string): string {
  s = unwrapTextCommands(s);
  for (const [from, to] of REWRITES) if (s.includes(from)) s = s.replaceAll(from, to);
  return s.replace(/\s+/g, " ").trim();
}

/**
 * Strips one layer of math delimiters around the whole string: `$…$`, `$$…$$`, `\(…\)`, `\[…\]`.
 * A lone leading `$` (currency) is left alone.
 */
export function stripMathDelimiters(s: string): string {
  const t = s.trim();
  const pairs: ReadonlyArray<readonly [string, string]> = [["$$", "$$"], ["\\(", "\\)"], ["\\[", "\\]"], ["$", "$"]];
  for (const [open, close] of pairs) {
    if (t.length >= open.length + close.length + 1 && t.startsWith(open) && t.endsWith(close)) {
      return t.slice(open.length, t.length - close.length).trim();
    }
  }
  return t;
}

/**
 * The argument of `\boxed`/`\fbox` starting at `at` (the index just after the command name): `{…}` with
 * balanced braces, or `\boxed 5` (one space-separated token). `null` when the brace is not closed within
 * `limit` characters (a reply cut off mid-answer); `undefined` when there is no argument at all
 * (`\boxedfoo` is some other command).
 */
export function boxedArgument(s: string, at: number, limit = 10_000): { content: string; end: number } | null | undefined {
  let i = at;
  while (s[i] === " ") i++;
  if (s[i] === "{") {
    const close = matchBrace(s, i, limit);
    if (close < 0) return null;
    return { content: s.slice(i + 1, close), end: close + 1 };
  }
  if (i === at || i >= s.length) return undefined;
  let j = i;
  while (j < s.length && j - i < limit && s[j] !== "$" && !/\s/.test(s[j] as string)) j++;
  return { content: s.slice(i, j), end: j };
}
