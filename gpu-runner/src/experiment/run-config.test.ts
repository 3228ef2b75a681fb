import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parseRunConfig, validateExperiment } from "./run-config";
import type { ExperimentFiles } from "../../contracts";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATE), "utf8");
const template: ExperimentFiles = {
  "scenario.ts": read("scenario.ts"),
  "reward.ts": read("reward.ts"),
  "tasks.jsonl": read("tasks.jsonl"),
  "config.json": read("config.json"),
};

describe("parseRunConfig", () => {
  it("accepts the template config and fills defaults", () => {
    const r = parseRunConfig(template["config.json"], "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.config.sampling.max_tokens).toBe(24);
    expect(r.config.limits.memory_mb).toBe(64);
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

describe("validateExperiment", () => {
  it("passes the template", async () => {
    const r = await validateExperiment(template, "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.tasks.train).toHaveLength(24);
    expect(r.config.num_steps).toBe(12);
    expect(r.compiled.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it("reports problems of every file together", async () => {
    const r = await validateExperiment(
      { ...template, "reward.ts": template["reward.ts"] + "\nconst n: number = 'x';\n", "tasks.jsonl": "{oops\n", "config.json": '{ "seed": -1 }' },
      "train",
    );
    expect(r.ok).toBe(false);
    expect(new Set(r.diagnostics.map((d) => d.file))).toEqual(new Set(["reward.ts", "tasks.jsonl", "config.json"]));
  });
});
