/**
 * One grammar for every identifier both languages parse (run ids, steps, `<run>@<step>`, base model names,
 * adapter keys, tool, secret and MCP server names), loaded from identifiers.json — the file the Python
 * engine loads too (rollbook_engine/identifiers.py). Why a data file and not a regex per side: a name both
 * sides parse is a contract, and the hole this closes was exactly two spellings of one rule (`\d` is ASCII
 * in JS and any Unicode digit in Python; Python's `$` matches before a final newline), so a `<run>@２` the
 * web server took for a base model was served by the engine as another workspace's checkpoint.
 *
 * Every pattern is matched against the whole string (`^(?:…)$` without flags: JS's `$` is the end of input
 * then), after a length check, so no input is ever scanned past its identifier's bound.
 */
// The import attribute: Node's own ESM loader (Playwright's, for one) refuses a JSON module without it.
import grammar from "./identifiers.json" with { type: "json" };

export type IdentifierKind = keyof typeof grammar.identifiers;

interface Rule {
  pattern: string;
  max_length: number;
  description: string;
}

const RULES: Readonly<Record<IdentifierKind, Rule>> = grammar.identifiers;
export const IDENTIFIER_KINDS = Object.keys(RULES) as IdentifierKind[];

/** A pattern with its `{name}` references replaced by the named identifiers' patterns, as groups. */
export function expandedPattern(kind: IdentifierKind, seen: readonly IdentifierKind[] = []): string {
  if (seen.includes(kind)) throw new Error(`identifiers.json: ${kind} refers to itself through ${seen.join(" → ")}`);
  return RULES[kind].pattern.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    if (!Object.hasOwn(RULES, name)) throw new Error(`identifiers.json: ${kind} refers to an unknown identifier {${name}}`);
    return `(?:${expandedPattern(name as IdentifierKind, [...seen, kind])})`;
  });
}

const WHOLE: Readonly<Record<IdentifierKind, RegExp>> = Object.fromEntries(
  IDENTIFIER_KINDS.map((kind) => [kind, new RegExp(`^(?:${expandedPattern(kind)})$`)]),
) as Record<IdentifierKind, RegExp>;

/** True when `value` is a well-formed `kind` (the whole string; non-strings are not). */
export function isIdentifier(kind: IdentifierKind, value: unknown): boolean {
  return typeof value === "string" && value.length <= RULES[kind].max_length && WHOLE[kind].test(value);
}

/** What a well-formed `kind` looks like, for error messages ("run id: 1-128 of A-Z a-z 0-9 _ -"). */
export const identifierRule = (kind: IdentifierKind): string => RULES[kind].description;

/** The longest a `kind` may be. */
export const identifierMaxLength = (kind: IdentifierKind): number => RULES[kind].max_length;

/**
 * The pattern of `kind` as a RegExp source WITHOUT anchors, for a zod `.regex()` wrapped by the caller, or
 * for searching inside a longer text (`${NAME}` references).
 */
export const identifierSource = (kind: IdentifierKind): string => expandedPattern(kind);

/** `^(?:…)$` of `kind`, for zod's `.regex()` (which also emits it as the JSON Schema `pattern`). */
export const identifierRegExp = (kind: IdentifierKind): RegExp => WHOLE[kind];
