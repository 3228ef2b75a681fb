/**
 * The JSON body of a plain HTTP door (/api/v1, /api/art/v1), read once under the door's cap and checked before
 * any schema or query sees it, so every refusal is a 400 naming the field:
 *
 *   - the body is capped and its nesting bounded while it streams (body-limit.ts);
 *   - NaN, Infinity and -Infinity, which Python's json.dumps writes by default (allow_nan=True) and
 *     JSON.parse cannot read, are named at their field instead of "the body is not JSON";
 *   - NUL anywhere, in a value or a key (Postgres text and jsonb cannot hold it: it was a 500 naming nothing,
 *     contracts/text-rules.ts);
 *   - a `__proto__` key anywhere (zod drops it unseen: contracts/json-keys.ts).
 *
 * The path comes back as an array; each door prints it its own way (ART's Python-style `a[2].b`).
 */
import { findPrototypeKey, MAX_JSON_DEPTH, prototypeKeyMessage } from "@contracts";
import { findTextIssue } from "@contracts/text-rules";
import { readCappedBody, type BodyCap } from "./body-limit";

export type JsonPath = readonly (string | number)[];

export type JsonBody = { ok: true; value: unknown } | { ok: false; status: number; message: string; path: JsonPath | null };

const NON_FINITE = ["-Infinity", "Infinity", "NaN"] as const;

/**
 * The text with each bare NaN / Infinity / -Infinity token (outside strings) replaced by a marked string, or
 * null when there is none: parsed, the marker's place is the field's path.
 */
function markNonFinite(text: string, markerJson: string): string | null {
  let out = "";
  let from = 0;
  let inString = false;
  let found = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') {
      inString = true;
      continue;
    }
    const token = NON_FINITE.find((t) => text.startsWith(t, i));
    if (!token) continue;
    out += `${text.slice(from, i)}"${markerJson}${token}"`;
    i += token.length - 1;
    from = i + 1;
    found = true;
  }
  return found ? out + text.slice(from) : null;
}

/** Where the first marked string lies in a parsed value, and which token it was (only reached for a body that failed to parse). */
function findMarked(value: unknown, marker: string): { path: JsonPath; token: string } | null {
  type Node = { key: string | number; parent: Node | null };
  const pathOf = (n: Node | null) => {
    const out: (string | number)[] = [];
    for (let at = n; at; at = at.parent) out.push(at.key);
    return out.reverse();
  };
  const stack: { value: unknown; at: Node | null }[] = [{ value, at: null }];
  while (stack.length > 0) {
    const { value: v, at } = stack.pop()!;
    if (typeof v === "string" && v.startsWith(marker)) return { path: pathOf(at), token: v.slice(marker.length) };
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], at: { key: i, parent: at } });
    else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], at: { key: entries[i]![0], parent: at } });
    }
  }
  return null;
}

function parse(text: string): JsonBody {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    // A string starting with NUL: a body holding one is refused anyway (below), so it cannot be mistaken.
    const marker = "\u0000non-finite:";
    const marked = markNonFinite(text, "\\u0000non-finite:");
    if (marked !== null) {
      try {
        const at = findMarked(JSON.parse(marked), marker);
        if (at) return { ok: false, status: 400, path: at.path, message: `${at.token} is not a finite number (JSON has none; Python's json.dumps writes it unless allow_nan=False)` };
      } catch {
        // Not JSON for another reason as well: said below.
      }
    }
    return { ok: false, status: 400, path: null, message: "the request body is not JSON" };
  }
}

/** The door's body as a checked JSON value; an empty body is `{}` (ART's client sends none for some calls). */
export async function readJsonBody(req: Request, cap: BodyCap): Promise<JsonBody> {
  const read = await readCappedBody(req, cap, { maxJsonDepth: MAX_JSON_DEPTH });
  if (!read.ok) return { ok: false, status: read.status, message: read.message, path: null };
  if (read.bytes.byteLength === 0) return { ok: true, value: {} };
  const parsed = parse(new TextDecoder().decode(read.bytes));
  if (!parsed.ok) return parsed;
  const text = findTextIssue(parsed.value);
  if (text) return { ok: false, status: 400, path: text.path, message: text.problem };
  const proto = findPrototypeKey(parsed.value);
  if (proto) return { ok: false, status: 400, path: proto, message: prototypeKeyMessage(String(proto.at(-1))) };
  return parsed;
}
