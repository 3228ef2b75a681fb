/**
 * Where and why a JSON text is invalid, the same in every browser and in Node. JSON.parse's messages differ
 * by engine (V8 often gives no position at all: `Unexpected token 'x', "{"a":x}" is not valid JSON`), so
 * after JSON.parse has failed, jsonc-parser (strict: no comments, no trailing commas) re-reads the text to
 * find the first error's offset. Only failed text pays for the second pass.
 */
import { type ParseError, parse as parseJsonc, printParseErrorCode } from "jsonc-parser";

// Keyed by printParseErrorCode's name: ParseErrorCode is a const enum, which isolatedModules cannot read.
const REASONS: Record<string, string> = {
  InvalidSymbol: "unexpected character (strings and keys need double quotes; NaN and undefined are not JSON)",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "expected a key in double quotes (a trailing comma?)",
  ValueExpected: "expected a value",
  ColonExpected: "expected ':' after the key",
  CommaExpected: "expected ',' between items",
  CloseBraceExpected: "expected '}' (the object is not closed)",
  CloseBracketExpected: "expected ']' (the array is not closed)",
  EndOfFileExpected: "unexpected text after the JSON value",
  InvalidCommentToken: "comments are not allowed in JSON",
  UnexpectedEndOfComment: "comments are not allowed in JSON",
  UnexpectedEndOfString: "unterminated string",
  UnexpectedEndOfNumber: "incomplete number",
  InvalidUnicode: "invalid \\u escape",
  InvalidEscapeCharacter: "invalid escape in a string",
  InvalidCharacter: "control character (a tab or newline) inside a string; escape it as \\t or \\n",
};

export interface JsonSyntaxError {
  /** 0-based offset into the text. */
  offset: number;
  /** "invalid JSON: expected ',' between items". */
  message: string;
}

/** Why `text`, which JSON.parse rejected with `thrown`, is not JSON, and where. */
export function jsonSyntaxError(text: string, thrown: unknown): JsonSyntaxError {
  const errors: ParseError[] = [];
  parseJsonc(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (first) return { offset: first.offset, message: `invalid JSON: ${REASONS[printParseErrorCode(first.error)] ?? "syntax error"}` };
  // jsonc-parser accepted what JSON.parse did not (should not happen): fall back to the engine's words.
  const engineMessage = thrown instanceof Error ? thrown.message : String(thrown);
  const at = /position (\d+)/.exec(engineMessage)?.[1];
  return { offset: at ? Number(at) : 0, message: `invalid JSON: ${engineMessage}` };
}

/** 1-based line and column of a 0-based offset (the experiment model's one helper). */
export { offsetToPosition as offsetToLineColumn } from "../experiment/json-position";

/** "null", "an array", "a string", "a number": for "must be a JSON object, got …". */
export function describeJsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
