/**
 * parseMathValue: one answer string → an exact rational, or null when the string is not exactly one
 * number. A hand-written cursor parser (no regex over the number itself), so it is linear in the input
 * and says "no" to anything ambiguous rather than guessing: "1, 2", "3,5", "3:30", "2024-01-05",
 * "2\pi" and "5 apples and 3 pears" are all null.
 */
import { boxedArgument, matchBrace, normalizeLatex, stripMathDelimiters } from "./latex";
import { type Rational, add, div, mul, neg, pow10, rational } from "./rational";
import { trimChars } from "./text";

/** An exact value; `percent` says it was written with % (the value is then already divided by 100). */
export interface MathValue extends Rational {
  readonly percent: boolean;
}

/** Longer strings are not "an answer" (and would make BigInt arithmetic the slow part). */
export const MAX_VALUE_CHARS = 10_000;
/** Largest |k| accepted in 1e<k> or 10^{k}: 10^1000 is still cheap; 1e999999999 would not be. */
export const MAX_EXPONENT = 1000;

const CURRENCY = "$€£¥₹";
// Markdown emphasis and quotes a model puts around an answer ("**42**", "'42'").
const EDGE_NOISE = " *_\"'`“”‘’";
const VULGAR: Readonly<Record<string, readonly [bigint, bigint]>> = {
  "½": [1n, 2n], "⅓": [1n, 3n], "⅔": [2n, 3n], "¼": [1n, 4n], "¾": [3n, 4n], "⅕": [1n, 5n], "⅖": [2n, 5n],
  "⅗": [3n, 5n], "⅘": [4n, 5n], "⅙": [1n, 6n], "⅚": [5n, 6n], "⅛": [1n, 8n], "⅜": [3n, 8n], "⅝": [5n, 8n],
  "⅞": [7n, 8n],
};
const MULTIPLIERS: Readonly<Record<string, number>> = { hundred: 2, thousand: 3, million: 6, billion: 9, trillion: 12 };
// Unit spellings accepted glued to the number ("5cm"); after a space any word is a unit unless DENIED.
const ATTACHED_UNITS = new Set([
  "mm", "cm", "m", "km", "in", "ft", "yd", "mi", "mg", "g", "kg", "t", "oz", "lb", "lbs", "ml", "l", "cl", "dl",
  "s", "ms", "sec", "secs", "min", "mins", "h", "hr", "hrs", "st", "nd", "rd", "th", "mph", "kmh", "kph",
  "cm²", "m²", "km²", "cm³", "m³", "usd", "eur", "gbp",
]);
// Words after a number that change its value or show it is not one number: constants, variables,
// operators, multiples and parts ("2 dozen", "3 quarters"), clock times and months. Lower-case; single lower-case letters are denied unless a unit.
const DENIED = new Set([
  "pi", "π", "sqrt", "root", "roots", "squared", "cubed", "times", "plus", "minus", "over", "divided",
  "and", "or", "to", "point", "dot", "am", "pm",
  "dozen", "dozens", "half", "halves", "third", "thirds", "quarter", "quarters", "fourths", "fifths", "tenths",
  "hundredths", "thousandths", "tens", "hundreds", "thousands", "millions", "billions", "a.m.", "p.m.", "o'clock", "e", "i", "x", "y", "z", "n", "k",
  "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
  "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
]);
const SINGLE_LETTER_UNITS = new Set(["m", "g", "s", "h", "l", "t"]);
// A unit token: letters, optionally with powers (^2, ^{-1}) and per-slashes (m/s). Tokens are capped
// at 40 characters in all before this runs, so its backtracking is bounded.
const UNIT_TOKEN = /^[\p{L}'’.²³]+(?:(?:\^\{?-?\d{1,3}\}?|\/)[\p{L}'’.²³]*)*$/u;

/**
 * The exact value of one number written the way models and datasets write them, or null when `text` is
 * not exactly one number.
 *
 * Accepted: integers of any size (`-7`, `10^30` written out); thousands separators `1,234,567`,
 * `1 234`, `1\,234`, `1{,}234` (groups of exactly 3); decimals `0.5`, `.5`; scientific `1.5e-3`,
 * `6.02 \times 10^{23}`; fractions `3/4`, `\frac{3}{4}`, `\dfrac`, `\tfrac`, `\frac34`, `½`; mixed
 * numbers `1 1/2`, `2\frac{1}{2}`; percentages `50%`, `50\%`, `50 percent` (value 1/2, `percent` set);
 * scale words `2 million`; a leading sign and currency `-$5`, `\$5`, `€3`; trailing units `5 cm`,
 * `12 dollars`, `3 apples`, `9.8 m/s^2`, `\text{cm}`, `90^\circ`; around it `$…$`, `\(…\)`, `\boxed{}`,
 * `\left( … \right)`, `**…**`, quotes, a full stop, and `x =`.
 *
 * Not numbers (null): `1, 2` and `3,5` (a list, a decimal comma), `3:30`, `2024-01-05`, `12/25/2024`,
 * `10 pm`, `2\pi`, `\sqrt{2}`, `5x`, `2^10`, `2 + 3`, `about 5`, `5 apples and 3 pears`, `1/0`, empty
 * text, and anything over 10,000 characters.
 *
 * @example parseMathValue("$1,234.50") // { num: 2469n, den: 2n, percent: false }
 * @example parseMathValue("\\frac{3}{4} cm") // { num: 3n, den: 4n, percent: false }
 */
export function parseMathValue(text: string): MathValue | null {
  if (typeof text !== "string" || text.length > MAX_VALUE_CHARS) return null;
  return parseClean(cleanAnswer(text));
}

/**
 * Peels what surrounds an answer: math delimiters, \boxed{}, outer braces or parentheses, `x =`, markdown
 * emphasis, quotes and a trailing full stop, after normalizeLatex. Also the canonical form used to
 * compare answers that are not numbers.
 */
export function cleanAnswer(text: string): string {
  // Math delimiters go first, on the raw text: after normalizeLatex a `\$` (currency) would look like one.
  let s = normalizeLatex(stripMathDelimiters(text));
  for (let pass = 0; pass < 8; pass++) {
    const before = s;
    s = stripMathDelimiters(s);
    s = trimChars(s, EDGE_NOISE, EDGE_NOISE + ".,;:!?");
    s = stripBoxed(s);
    s = stripOuter(s, "{", "}");
    s = stripOuter(s, "(", ")");
    // `x = 5`, `\theta = 30`, `x_{1} = 2`: the value is the right-hand side.
    s = s.replace(/^\\?[A-Za-z][A-Za-z0-9_{}']{0,15} ?= ?/, "");
    if (s === before) break;
  }
  return s;
}

function stripBoxed(s: string): string {
  for (const cmd of ["\\boxed", "\\fbox"]) {
    if (!s.startsWith(cmd)) continue;
    const arg = boxedArgument(s, cmd.length);
    if (arg && arg.end === s.length) return arg.content.trim();
  }
  return s;
}

/** `(…)` → `…` when the pair encloses the whole string and holds no top-level comma (a tuple). */
function stripOuter(s: string, open: string, close: string): string {
  if (!s.startsWith(open) || !s.endsWith(close)) return s;
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === open) depth++;
    else if (c === close) {
      depth--;
      if (depth === 0 && i !== s.length - 1) return s; // "(1)+(2)": the first pair closes early
    } else if (c === "," && depth === 1) return s;
  }
  return depth === 0 ? s.slice(1, -1).trim() : s;
}

function parseClean(s: string): MathValue | null {
  let i = 0;
  let negative = false;
  let signed = false;
  let currency = false;
  // A sign and a currency symbol, in either order: "-$5", "$-5", "+5", "- 5".
  for (let k = 0; k < 2; k++) {
    const c = s[i];
    if (!signed && (c === "-" || c === "+")) {
      negative = c === "-";
      signed = true;
    } else if (!currency && c !== undefined && CURRENCY.includes(c)) {
      currency = true;
    } else break;
    i = skipSpaces(s, i + 1);
  }
  const core = parseCore(s, i);
  if (!core) return null;
  const suffix = parseSuffix(s.slice(core.end), core.end < s.length && s[core.end] !== " ", !currency);
  if (!suffix) return null;
  let value = core.value;
  if (suffix.exponent) value = scaleBy10(value, suffix.exponent);
  if (suffix.percent) value = mul(value, { num: 1n, den: 100n });
  if (negative) value = neg(value);
  return { num: value.num, den: value.den, percent: suffix.percent };
}

/** value × 10^k, k of either sign. */
function scaleBy10(value: Rational, k: number): Rational {
  return mul(value, k >= 0 ? { num: pow10(k), den: 1n } : { num: 1n, den: pow10(-k) });
}

interface Parsed {
  value: Rational;
  end: number;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= "0" && c <= "9";
}

function skipSpaces(s: string, i: number): number {
  while (s[i] === " ") i++;
  return i;
}

/** The number itself: \frac, a/b, a mixed number, a decimal with separators or an exponent. */
function parseCore(s: string, i: number): Parsed | null {
  if (s.startsWith("\\frac", i)) return parseFrac(s, i);
  const v = vulgar(s, i);
  if (v) return v;
  const a = parseDecimal(s, i);
  if (!a) return null;
  const sci = parseTimesTenPower(s, a.end);
  if (sci === null) return null;
  if (sci) return { value: scaleBy10(a.value, sci.exponent), end: sci.end };
  const slash = skipSpaces(s, a.end);
  if (s[slash] === "/") {
    const b = parseDecimal(s, skipSpaces(s, slash + 1));
    const q = b && div(a.value, b.value);
    return b && q ? { value: q, end: b.end } : null;
  }
  if (a.integer) {
    const mixed = parseMixedTail(s, a.end);
    if (mixed) return { value: add(a.value, mixed.value), end: mixed.end };
  }
  return a;
}

/** The proper fraction after a mixed number's whole part: ` 1/2`, ` \frac{1}{2}`, `\frac12`, `½`. */
function parseMixedTail(s: string, i: number): Parsed | null {
  const j = s[i] === " " ? i + 1 : i;
  let f: Parsed | null = null;
  if (s.startsWith("\\frac", j)) f = parseFrac(s, j);
  else if (vulgar(s, j)) f = vulgar(s, j);
  else if (j > i && isDigit(s[j])) {
    const n = parseDigits(s, j);
    const slash = skipSpaces(s, n.end);
    if (s[slash] !== "/") return null;
    const d = parseDigits(s, skipSpaces(s, slash + 1));
    const q = n.digits && d.digits ? rational(BigInt(n.digits), BigInt(d.digits)) : null;
    f = q ? { value: q, end: d.end } : null;
  }
  // Only a proper, non-negative fraction makes "1 1/2" a mixed number; "1 3/2" is left unparsed.
  if (!f || f.value.num < 0n || f.value.num >= f.value.den) return null;
  return f;
}

function vulgar(s: string, i: number): Parsed | null {
  const v = VULGAR[s[i] ?? ""];
  return v ? { value: { num: v[0], den: v[1] }, end: i + 1 } : null;
}

function parseDigits(s: string, i: number): { digits: string; end: number } {
  let j = i;
  while (isDigit(s[j])) j++;
  return { digits: s.slice(i, j), end: j };
}

/**
 * An unsigned decimal: `1234`, `1,234,567`, `1 234`, `0.5`, `.5`, `1.5e-3`. `integer` is true when it
 * had no decimal point and no exponent (only integers start a mixed number).
 */
function parseDecimal(s: string, i: number): (Parsed & { integer: boolean }) | null {
  const head = parseDigits(s, i);
  let intDigits = head.digits;
  let j = head.end;
  // Thousands groups: one separator kind, groups of exactly 3 after a first group of 1 to 3 digits. A
  // space group followed by "/" is the numerator of a mixed number ("1 234/1000"), not a group.
  if (intDigits.length >= 1 && intDigits.length <= 3) {
    let sep: string | undefined;
    for (;;) {
      const c = s[j];
      if ((c !== "," && c !== " ") || (sep !== undefined && c !== sep)) break;
      const group = parseDigits(s, j + 1);
      if (group.digits.length !== 3) break;
      if (c === " " && s[skipSpaces(s, group.end)] === "/") break;
      sep = c;
      intDigits += group.digits;
      j = group.end;
    }
  }
  let fracDigits = "";
  let integer = true;
  if (s[j] === "." && isDigit(s[j + 1])) {
    const frac = parseDigits(s, j + 1);
    fracDigits = frac.digits;
    j = frac.end;
    integer = false;
  }
  if (intDigits === "" && fracDigits === "") return null;
  let exponent = 0;
  if ((s[j] === "e" || s[j] === "E") && (isDigit(s[j + 1]) || ((s[j + 1] === "-" || s[j + 1] === "+") && isDigit(s[j + 2])))) {
    const signAt = isDigit(s[j + 1]) ? -1 : j + 1;
    const exp = parseDigits(s, signAt < 0 ? j + 1 : j + 2);
    exponent = Number(exp.digits) * (s[signAt] === "-" ? -1 : 1);
    if (exp.digits.length > 6 || Math.abs(exponent) > MAX_EXPONENT) return null;
    j = exp.end;
    integer = false;
  }
  const scale = exponent - fracDigits.length;
  const digits = BigInt(intDigits + fracDigits);
  const value = scale >= 0 ? rational(digits * pow10(scale)) : rational(digits, pow10(-scale));
  return value ? { value, end: j, integer } : null;
}

/**
 * ` × 10^{k}` / `*10^k` / ` x 10^k` after a mantissa. Returns undefined when there is none, null when it
 * is there but malformed or too large.
 */
function parseTimesTenPower(s: string, i: number): { exponent: number; end: number } | null | undefined {
  let j = skipSpaces(s, i);
  if (s[j] !== "×" && s[j] !== "*" && s[j] !== "x") return undefined;
  j = skipSpaces(s, j + 1);
  if (!s.startsWith("10^", j)) return undefined;
  j += 3;
  let body: string;
  let end: number;
  if (s[j] === "{") {
    const close = matchBrace(s, j, 16);
    if (close < 0) return null;
    body = s.slice(j + 1, close).trim();
    end = close + 1;
  } else {
    const sign = s[j] === "-" || s[j] === "+" ? 1 : 0;
    const d = parseDigits(s, j + sign);
    body = s.slice(j, d.end);
    end = d.end;
  }
  if (!/^[-+]?\d{1,6}$/.test(body)) return null;
  const exponent = Number(body);
  return Math.abs(exponent) > MAX_EXPONENT ? null : { exponent, end };
}

/** `\frac{a}{b}` or `\frac12`; a and b signed decimals. */
function parseFrac(s: string, i: number): Parsed | null {
  const a = fracArg(s, i + "\\frac".length);
  const b = a && fracArg(s, a.end);
  const q = b && div(a.value, b.value);
  return q ? { value: q, end: b.end } : null;
}

function fracArg(s: string, i: number): Parsed | null {
  const j = skipSpaces(s, i);
  if (isDigit(s[j])) return { value: { num: BigInt(s[j] as string), den: 1n }, end: j + 1 };
  if (s[j] !== "{") return null;
  const close = matchBrace(s, j, 2_000);
  if (close < 0) return null;
  const inner = s.slice(j + 1, close).trim();
  const negative = inner.startsWith("-");
  const body = negative || inner.startsWith("+") ? inner.slice(1).trimStart() : inner;
  const d = parseDecimal(body, 0);
  if (!d || d.end !== body.length) return null;
  return { value: negative ? neg(d.value) : d.value, end: close + 1 };
}

/**
 * What may follow a number: `%` / `percent`, a scale word (`million`), a currency symbol, and up to four
 * unit words (`5 cm`, `12 US dollars`, `60 miles per hour`, `9.8 m/s^2`). Null when the rest is anything
 * else (another number, an operator, a variable, a clock time or a date).
 */
function parseSuffix(rest: string, attached: boolean, currencyAllowed: boolean): { percent: boolean; exponent: number } | null {
  let u = rest.trim();
  let percent = false;
  let exponent = 0;
  if (u.startsWith("%")) {
    percent = true;
    u = u.slice(1).trim();
  } else {
    const word = /^(?:percent|per cent)\b/i.exec(u);
    if (word) {
      percent = true;
      u = u.slice(word[0].length).trim();
    } else {
      const scale = /^[a-z]+/i.exec(u)?.[0].toLowerCase();
      const exp = scale === undefined ? undefined : MULTIPLIERS[scale];
      if (exp !== undefined && scale !== undefined) {
        exponent = exp;
        u = u.slice(scale.length).trim();
        attached = false;
      }
    }
    if (currencyAllowed && u[0] !== undefined && CURRENCY.includes(u[0])) u = u.slice(1).trim();
  }
  if (u === "") return { percent, exponent };
  return isUnitTail(u, attached && !percent) ? { percent, exponent } : null;
}

function isUnitTail(u: string, attached: boolean): boolean {
  if (u.length > 40 || u.includes("\\")) return false;
  // `\text{cm}^2` arrives as "cm ^2": the power belongs to the unit before it.
  const tokens = u.replaceAll(" ^", "^").split(" ");
  if (tokens.length > 4) return false;
  for (const [k, token] of tokens.entries()) {
    if (!UNIT_TOKEN.test(token)) return false;
    const lower = token.toLowerCase();
    if (DENIED.has(lower)) return false;
    if (token.length === 1 && token >= "a" && token <= "z" && !SINGLE_LETTER_UNITS.has(token)) return false;
    if (k === 0 && attached) {
      const base = /^[\p{L}²³]+/u.exec(token)?.[0].toLowerCase() ?? "";
      if (!ATTACHED_UNITS.has(base)) return false;
    }
  }
  return true;
}
