/**
 * The TS half of the identifier grammar's check: every line of fixtures/identifiers.jsonl gets its verdict
 * from identifiers.ts / model-ref.ts. gpu-runner/engine/tests/test_identifiers.py checks the same lines with
 * the engine's parser, so a verdict that changes on one side only fails that side's suite.
 */
import { describe, expect, it } from "vitest";
import grammar from "./identifiers.json" with { type: "json" };
import { IDENTIFIER_KINDS, expandedPattern, isIdentifier } from "./identifiers";
import { classifyModelName } from "./model-ref";
import { identifierCorpus, modelSpellings } from "./fixtures/identifier-corpus";

const SAMPLE_RUN = "rb6f1c0e2d4a94b1c8e7f1a2b3c4d5e6f";
const show = (s: string) => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

describe("identifiers.json: one grammar both languages read alike", () => {
  it("uses only the syntax JS and Python agree on: no backslash, no '.', '^' or '$' outside a class, only (?: groups", () => {
    for (const kind of IDENTIFIER_KINDS) {
      const p = expandedPattern(kind);
      expect(p, kind).not.toMatch(/\\/);
      const outside = p.replace(/\[[^\]]*\]/g, "");
      expect(outside, kind).not.toMatch(/[.^$*+]/);
      expect(outside.match(/\(\?[^:]/g), kind).toBeNull();
      // Only ASCII: a class like [0-9] means the same bytes in both languages.
      expect(p, kind).toMatch(/^[\x20-\x7e]+$/);
    }
  });

  it("every identifier has a max_length its pattern cannot exceed", () => {
    for (const kind of IDENTIFIER_KINDS) {
      const rule = grammar.identifiers[kind];
      expect(rule.max_length, kind).toBeGreaterThan(0);
      expect(isIdentifier(kind, "a".repeat(rule.max_length + 1)), kind).toBe(false);
    }
  });
});

describe("fixtures/identifiers.jsonl: the hostile spellings corpus", () => {
  const lines = identifierCorpus();

  it("covers every identifier and the model names", () => {
    const kinds = new Set(lines.map((l) => l.kind));
    for (const kind of [...IDENTIFIER_KINDS, "model"]) expect(kinds.has(kind as never), kind).toBe(true);
  });

  for (const line of lines) {
    if (!("ok" in line)) continue; // the model names, below
    it(`${line.kind} ${show(line.input)}: ${line.ok ? "accepted" : "refused"} (${line.why})`, () => {
      expect(isIdentifier(line.kind, line.input)).toBe(line.ok);
    });
  }

  for (const line of modelSpellings(SAMPLE_RUN)) {
    it(`model ${show(line.input.slice(0, 60))}: ${line.verdict} (${line.why})`, () => {
      const got = classifyModelName(line.input);
      expect(got.kind).toBe(line.verdict);
      if (got.kind === "checkpoint") expect(got.step).toBe(line.step);
    });
  }
});
