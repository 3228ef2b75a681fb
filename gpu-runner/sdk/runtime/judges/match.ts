/**
 * exactMatch and regexMatch/regexFind: string judges shaped for model output, where "Paris.",
 * "**Paris**" and " paris " should all count as "Paris", and "Answer: 42." should match /answer: (\d+)/.
 */
import { trimChars } from "./text";

export interface MatchOptions {
  /** Compare letter case too. Default false: "Paris" matches "paris" (small models' casing is noise). */
  caseSensitive?: boolean;
  /** Remove surrounding whitespace. Default true. */
  trim?: boolean;
  /** Count any run of whitespace (newlines, tabs) as one space. Default true. */
  collapseWhitespace?: boolean;
  /**
   * Remove surrounding quotes, markdown emphasis (`*`, `_`), brackets, and trailing sentence punctuation
   * (`.,;:!?`), so `"**(B).**"` matches `B`. A leading `-`, `+` or `.` is kept: "-5" is not "5". Default true.
   */
  stripPunctuation?: boolean;
}

export interface RegexOptions {
  /**
   * The whole output must match, not a part of it. The output is first trimmed and stripped of
   * surrounding quotes, emphasis and trailing punctuation (as exactMatch does), so `"Answer: 42."`
   * fully matches `answer: \d+`. Default false.
   */
  full?: boolean;
  /** For a string pattern: match letter case too. Default false (the `i` flag). A RegExp keeps its own flags. */
  caseSensitive?: boolean;
  /** Which match regexFind reports when there are several. Default "last": a model's final statement wins. */
  occurrence?: "first" | "last";
  /**
   * Longer outputs are searched in their last `maxLength` characters (and never match in `full` mode),
   * bounding the cost of a pattern that backtracks. Default 100,000.
   */
  maxLength?: number;
}

export interface RegexFindResult {
  /** The matched text. */
  match: string;
  /** Capture groups 1..n (undefined where a group did not take part). */
  groups: Array<string | undefined>;
  /** Named capture groups. */
  named: Record<string, string | undefined>;
  /** Where the match starts in the searched text. */
  index: number;
}

const LEAD = " \t\r\n\"'`«»*_([{";
const TRAIL = " \t\r\n\"'`«»*_)]}.,;:!?";
const DEFAULT_MAX_LENGTH = 100_000;

/**
 * The text exactMatch compares: Unicode NFKC (fullwidth and compatibility forms folded), curly quotes
 * made straight, then the options' whitespace, punctuation and case handling.
 */
export function normalizeForMatch(s: string, opts: MatchOptions = {}): string {
  // NFKC folds fullwidth and compatibility forms ("Ａ", "ﬁ"); curly quotes become straight ones.
  let t = s.normalize("NFKC").replace(/[‘’]/g, "'").replace(/[“”]/g, '"');
  if (opts.collapseWhitespace !== false) t = t.replace(/\s+/g, " ");
  // Stripping punctuation strips the whitespace around it too (both sets hold whitespace).
  if (opts.stripPunctuation !== false) t = trimChars(t, LEAD, TRAIL);
  else if (opts.trim !== false) t = t.trim();
  return opts.caseSensitive ? t : t.toLowerCase();
}

/**
 * True when `output` equals `expected`, or any of several accepted answers, after normalization: by
 * default letter case, surrounding whitespace, quotes, markdown emphasis, brackets and trailing
 * punctuation are ignored and whitespace runs count as one space (see MatchOptions). null or undefined
 * output never matches.
 *
 * @example exactMatch("**Paris.**", "paris") // true
 * @example exactMatch(output, ["NYC", "New York", "New York City"])
 */
export function exactMatch(output: string | null | undefined, expected: string | readonly string[], opts: MatchOptions = {}): boolean {
  if (typeof output !== "string") return false;
  const got = normalizeForMatch(output, opts);
  const accepted = typeof expected === "string" ? [expected] : expected;
  return accepted.some((e) => typeof e === "string" && normalizeForMatch(e, opts) === got);
}

/**
 * True when `pattern` matches somewhere in `output`, or all of it with `{ full: true }`. A string pattern
 * is compiled case-insensitively unless `caseSensitive`; an invalid one throws a SyntaxError.
 *
 * @example regexMatch("Answer: 42.", "answer:\\s*42\\b") // true
 * @example regexMatch("Answer: 42.", /^answer: \d+$/i, { full: true }) // true
 */
export function regexMatch(output: string | null | undefined, pattern: RegExp | string, opts: RegexOptions = {}): boolean {
  return regexFind(output, pattern, { ...opts, occurrence: "first" }) !== null;
}

/**
 * The match of `pattern` in `output` with its capture groups, or null. With several matches it returns
 * the last one by default, since a model's final statement is the one that counts
 * (`{ occurrence: "first" }` for the first).
 *
 * @example regexFind("Answer: 3. No wait, Answer: 4.", "answer: (\\d+)")?.groups[0] // "4"
 */
export function regexFind(output: string | null | undefined, pattern: RegExp | string, opts: RegexOptions = {}): RegexFindResult | null {
  if (typeof output !== "string") return null;
  const max = opts.maxLength ?? DEFAULT_MAX_LENGTH;
  let text = output;
  if (opts.full) {
    text = normalizeForMatch(output, { caseSensitive: true, collapseWhitespace: false });
    if (text.length > max) return null;
  } else if (text.length > max) {
    text = text.slice(-max);
  }
  const re = compile(pattern, opts);
  if (opts.full || opts.occurrence === "first") {
    re.lastIndex = 0;
    const m = re.exec(text);
    return m ? result(m) : null;
  }
  let last: RegExpExecArray | null = null;
  re.lastIndex = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    last = m;
    if (m[0] === "") re.lastIndex++; // an empty match would otherwise repeat forever
  }
  return last ? result(last) : null;
}

function compile(pattern: RegExp | string, opts: RegexOptions): RegExp {
  let source: string;
  let flags: string;
  if (typeof pattern === "string") {
    source = pattern;
    flags = opts.caseSensitive ? "" : "i";
  } else {
    source = pattern.source;
    flags = pattern.flags.replace(/[gy]/g, "");
  }
  // In full mode ^…$ must mean the whole text, not one line of it.
  if (opts.full) {
    source = `^(?:${source})$`;
    flags = flags.replace("m", "");
  }
  if (!opts.full) flags += "g"; // global, to walk to the last match
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new SyntaxError(`invalid regex pattern ${JSON.stringify(source)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function result(m: RegExpExecArray): RegexFindResult {
  return { match: m[0], groups: m.slice(1), named: { ...m.groups }, index: m.index };
}
