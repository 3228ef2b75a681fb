/**
 * Finding the JSON in a judge's reply: models wrap it in prose and ```json fences, think aloud first, and
 * leave trailing commas. jsonValues returns every object or array in the text that parses, in order.
 * Each candidate is found by one string-aware bracket scan, and the number of failed candidates is
 * capped, so no reply can make this quadratic.
 */

/** Candidates that may fail (unbalanced or not JSON) before the scan gives up. */
const MAX_FAILED_CANDIDATES = 64;

/** Index of the bracket closing the one at `open`, skipping brackets inside JSON strings; -1 if none. */
function matchJson(s: string, open: number): number {
  let depth = 0;
  let inString = false;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === "{" || c === "[") {
      depth++;
    } else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** `s` without commas that directly precede a closing bracket (outside strings). */
function dropTrailingCommas(s: string): string {
  const out: string[] = [];
  let inString = false;
  let pendingComma = -1; // index in `out` of a comma that may turn out to be trailing
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (inString) {
      if (c === "\\") out.push(c + (s[++i] ?? ""));
      else {
        out.push(c);
        if (c === '"') inString = false;
      }
      continue;
    }
    if ((c === "}" || c === "]") && pendingComma >= 0) out[pendingComma] = "";
    if (c === ",") pendingComma = out.length;
    else if (c !== " " && c !== "\n" && c !== "\r" && c !== "\t") pendingComma = -1;
    if (c === '"') inString = true;
    out.push(c);
  }
  return out.join("");
}

function parseRelaxed(s: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(s) as unknown };
  } catch {
    try {
      return { ok: true, value: JSON.parse(dropTrailingCommas(s)) as unknown };
    } catch {
      return { ok: false };
    }
  }
}

/** Every JSON object or array in `text` that parses (trailing commas forgiven), outermost ones, in order. */
export function jsonValues(text: string): unknown[] {
  const found: unknown[] = [];
  let failures = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== "{" && c !== "[") continue;
    const end = matchJson(text, i);
    const parsed = end < 0 ? { ok: false as const } : parseRelaxed(text.slice(i, end + 1));
    if (parsed.ok) {
      found.push(parsed.value);
      i = end; // nested values are part of this one
    } else if (++failures > MAX_FAILED_CANDIDATES) {
      break;
    }
  }
  return found;
}

/** The reply after a reasoning model's last `</think>`: what was thought before it is not the answer. */
export function afterThinking(text: string): string {
  const at = text.lastIndexOf("</think>");
  return at < 0 ? text : text.slice(at + "</think>".length);
}
