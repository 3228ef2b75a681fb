import { describe, expect, it } from "vitest";
import { JsonDepthScanner, MAX_JSON_DEPTH, jsonTooDeepAt, nestedTooDeepMessage, valueTooDeep } from "./json-depth";

const arrays = (n: number) => "[".repeat(n) + "]".repeat(n);

describe("json depth", () => {
  it("accepts nesting up to the cap and points at the first bracket past it", () => {
    expect(jsonTooDeepAt(arrays(MAX_JSON_DEPTH))).toBeNull();
    expect(jsonTooDeepAt(arrays(MAX_JSON_DEPTH + 1))).toBe(MAX_JSON_DEPTH);
    expect(jsonTooDeepAt(`{"a": ${arrays(100_000)}}`)).toBe(6 + MAX_JSON_DEPTH - 1);
    expect(jsonTooDeepAt('{"a":{"b":[1,{"c":2}]}}', 4)).toBeNull();
    expect(jsonTooDeepAt('{"a":{"b":[1,{"c":2}]}}', 3)).toBe(13);
    expect(jsonTooDeepAt('{"a":{"b":[1,{"c":2}]}}', 2)).toBe(10);
  });

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(jsonTooDeepAt(`{"s": "${"[".repeat(500)}"}`)).toBeNull();
    expect(jsonTooDeepAt(`["a\\"[[[[", "\\\\", ${arrays(3)}]`, 4)).toBeNull();
    expect(jsonTooDeepAt(`["a\\"[[[[", "\\\\", ${arrays(4)}]`, 4)).not.toBeNull();
  });

  it("counts siblings at their own depth, not the sum", () => {
    expect(jsonTooDeepAt(Array.from({ length: 1000 }, () => arrays(10)).join(","), 10)).toBeNull();
  });

  it("streams: pieces of text or UTF-8 bytes give the offset over everything fed", () => {
    const s = new JsonDepthScanner(3);
    expect(s.feed('{"é": "[[[[",')).toBe(-1);
    expect(s.feed(new TextEncoder().encode(' "x": [['))).toBe(-1);
    // Offsets count the units fed: 13 UTF-16 units of text, then 8 bytes.
    expect(s.feed("[")).toBe(13 + 8);
  });

  it("parsed values: deeper than the cap is found without recursion", () => {
    expect(valueTooDeep(JSON.parse(arrays(MAX_JSON_DEPTH)))).toBe(false);
    expect(valueTooDeep(JSON.parse(arrays(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(valueTooDeep(JSON.parse(`{"a":${arrays(100_000)}}`))).toBe(true);
    expect(valueTooDeep({ a: [1, "x", null], b: { c: {} } }, 3)).toBe(false);
    expect(valueTooDeep({ a: { b: { c: {} } } }, 3)).toBe(true);
    expect(valueTooDeep("text")).toBe(false);
  });

  it("says the rule in words", () => {
    expect(nestedTooDeepMessage()).toBe("nested deeper than 64 levels");
  });
});
