import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parseRunConfig } from "./config-parse";
import { findKeyOffset, offsetToPosition, parseJson } from "./json-position";
import { MAX_JSON_DEPTH } from "../json-depth";

const TEMPLATE = new URL("../../templates/say-the-word/", import.meta.url);
const template = { "config.json": readFileSync(new URL("config.json", TEMPLATE), "utf8") };

describe("parseRunConfig", () => {
  it("accepts the template config and fills defaults", () => {
    const r = parseRunConfig(template["config.json"], "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.config.limits.memory_mb).toBe(64);
    expect(r.config.judge.base_url).toBeNull();
  });

  it("names trainer.learning_rate at its line for a negative learning rate", () => {
    const text = '{\n  "seed": 1,\n  "trainer": {\n    "loss": "ppo",\n    "learning_rate": -0.1\n  }\n}\n';
    const r = parseRunConfig(text, "train");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]).toMatchObject({ file: "config.json", line: 5, column: 5 });
    expect(r.diagnostics[0]?.message).toMatch(/^trainer\.learning_rate: /);
  });

  it("points JSON syntax errors at their line and column", () => {
    const r = parseRunConfig('{\n  "seed": 1\n  "num_steps": 2\n}', "train");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]).toMatchObject({ file: "config.json", line: 3, column: 3 });
  });

  it("catches unknown fields (typos) at the key", () => {
    const r = parseRunConfig('{\n  "sampling": { "temprature": 0.5 }\n}', "train");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]).toMatchObject({ line: 2, column: 17, message: "sampling.temprature: unknown field" });
  });

  it("needs 2+ rollouts per group to train, not to evaluate", () => {
    const text = '{\n  "rollouts_per_group": 1\n}';
    const r = parseRunConfig(text, "train");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]).toMatchObject({ line: 2, message: expect.stringContaining("GRPO needs at least 2 rollouts per group to compare") });
    expect(parseRunConfig(text, "eval").ok).toBe(true);
  });
});

describe("json positions", () => {
  it("finds nested keys and array elements, and the deepest key that exists", () => {
    const text = '{\n  "trainer": {\n    "lora_target_modules": ["q_proj", "v_proj"]\n  }\n}';
    expect(offsetToPosition(text, findKeyOffset(text, ["trainer", "lora_target_modules", 1])!)).toEqual({ line: 3, column: 39 });
    expect(offsetToPosition(text, findKeyOffset(text, ["trainer", "nope"])!)).toEqual({ line: 2, column: 3 });
    expect(findKeyOffset(text, ["nope"])).toBeUndefined();
    expect(findKeyOffset("[1,2]", ["a"])).toBeUndefined();
  });

  it("parses JSON or says where it broke", () => {
    expect(parseJson('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    const bad = parseJson('{"a": 1,\n "b": }');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(offsetToPosition('{"a": 1,\n "b": }', bad.offset)).toEqual({ line: 2, column: 7 });
  });

  it("refuses a config nested past MAX_JSON_DEPTH at the bracket, valid JSON or not, before anything recursive reads it", () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    for (const text of [`{\n  "num_steps": 1,\n  "x": ${deep}\n}`, `{\n  "num_steps": 1,\n  "x": ${"[".repeat(100_000)}`]) {
      const res = parseRunConfig(text);
      expect(res).toEqual({
        ok: false,
        diagnostics: [{ file: "config.json", line: 3, column: 8 + MAX_JSON_DEPTH - 1, message: `config.json is nested deeper than ${MAX_JSON_DEPTH} levels`, severity: "error" }],
      });
      expect(findKeyOffset(text, ["x"])).toBeUndefined();
    }
  });
});
