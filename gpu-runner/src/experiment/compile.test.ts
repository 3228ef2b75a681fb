import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SDK_DTS, compileExperiment } from "./compile";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const template = {
  "scenario.ts": readFileSync(new URL("scenario.ts", TEMPLATE), "utf8"),
  "reward.ts": readFileSync(new URL("reward.ts", TEMPLATE), "utf8"),
};

describe("compileExperiment", () => {
  it("compiles the default template into two IIFE scripts", async () => {
    const r = await compileExperiment(template);
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.compiled.scenarioJs).toContain("var __rollbook_scenario = (() => {");
    expect(r.compiled.rewardJs).toContain("var __rollbook_reward = (() => {");
    expect(r.compiled.hash).toMatch(/^[0-9a-f]{64}$/);
    // Types are gone and nothing of "rollbook" or ./scenario survives as a runtime import.
    expect(r.compiled.rewardJs).not.toMatch(/\bimport\b|\brequire\(/);
  });

  it("is deterministic and fast once warm", async () => {
    await compileExperiment(template);
    const t0 = performance.now();
    const a = await compileExperiment(template);
    // A statement that runs changes the hash (appended, so this holds whatever the template's reward says).
    const b = await compileExperiment({ ...template, "reward.ts": template["reward.ts"] + "\nconsole.log('loaded');\n" });
    const c = await compileExperiment({ ...template, "reward.ts": template["reward.ts"] + "\n// a comment changes nothing that runs\n" });
    const ms = (performance.now() - t0) / 3;
    expect(a.ok && b.ok).toBe(true);
    if (a.ok && b.ok && c.ok) {
      expect(a.compiled.hash).not.toBe(b.compiled.hash);
      expect(a.compiled.hash).toBe(c.compiled.hash);
    }
    expect(ms).toBeLessThan(1000);
  });

  it("reports a type error in reward.ts at its file and line", async () => {
    const reward = template["reward.ts"].replace("const word = task.word.toLowerCase();", "const word: number = task.word;");
    const line = reward.split("\n").findIndex((l) => l.includes("const word: number")) + 1;
    const r = await compileExperiment({ ...template, "reward.ts": reward });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const d = r.diagnostics.find((x) => x.message.includes("not assignable to type 'number'"));
    expect(d).toMatchObject({ file: "reward.ts", line, severity: "error" });
    expect(d?.column).toBe(9);
  });

  it("reports a syntax error in scenario.ts at its line", async () => {
    const scenario = template["scenario.ts"].replace("return reply.content;", "return reply.content +;");
    const line = scenario.split("\n").findIndex((l) => l.includes("reply.content +;")) + 1;
    const r = await compileExperiment({ ...template, "scenario.ts": scenario });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics[0]).toMatchObject({ file: "scenario.ts", line });
  });

  it("refuses module imports with a diagnostic at the import", async () => {
    const scenario = `import fs from "fs";\nimport type { RolloutContext } from "rollbook";\n` + template["scenario.ts"].replace(/^import type .*\n/, "");
    const r = await compileExperiment({ ...template, "scenario.ts": scenario });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const d = r.diagnostics.filter((x) => x.message.includes('"fs"'));
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ file: "scenario.ts", line: 1, column: 16 });
    expect(d[0]?.message).toContain("cannot import");
    // TypeScript's own "Cannot find module" is replaced, not doubled.
    expect(r.diagnostics.some((x) => x.message.includes("Cannot find module"))).toBe(false);
  });

  it("refuses dynamic import() and require() too", async () => {
    const scenario = `export default async function rollout() {\n  const m = await import("node:child_process");\n  return String(m);\n}\n`;
    const r = await compileExperiment({ ...template, "scenario.ts": scenario });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toContainEqual(expect.objectContaining({ file: "scenario.ts", line: 2, message: expect.stringContaining("node:child_process") }));
  });

  it("sees no DOM or Node globals", async () => {
    const scenario = `export default async function rollout() {\n  return [typeof document, process.env.HOME];\n}\n`;
    const r = await compileExperiment({ ...template, "scenario.ts": scenario, "reward.ts": "export default function reward() { return 0; }\n" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics.map((d) => d.message).join("\n")).toMatch(/Cannot find name 'document'[\s\S]*Cannot find name 'process'/);
  });

  it("requires default exports", async () => {
    const r = await compileExperiment({ ...template, "reward.ts": "export function reward() { return 1; }\n" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toContainEqual(expect.objectContaining({ file: "reward.ts", message: expect.stringContaining("default export") }));
  });

  it("exports the SDK text", () => {
    expect(SDK_DTS).toContain('declare module "rollbook"');
  });
});
