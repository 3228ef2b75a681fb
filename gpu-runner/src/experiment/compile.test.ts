import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { compileExperiment } from "./compile";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const template: Record<string, string> = {
  "scenario.ts": readFileSync(new URL("scenario.ts", TEMPLATE), "utf8"),
  "reward.ts": readFileSync(new URL("reward.ts", TEMPLATE), "utf8"),
};

/** The bundle without its inline source map (whose base64 could contain any word). */
const code = (js: string) => js.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "");

describe("compileExperiment", () => {
  it("compiles the default template into one IIFE script that installs the entry points", async () => {
    const r = await compileExperiment(template);
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.compiled.js).toMatch(/^var __rollbook_bundle = \(\(\) => \{/);
    expect(r.compiled.js).toContain("installEntryPoints(");
    expect(r.compiled.hash).toMatch(/^[0-9a-f]{64}$/);
    // Nothing survives as a module import, and no bundler shim defines `require` inside the sandbox.
    expect(code(r.compiled.js)).not.toMatch(/^\s*import\b|\brequire\(|__require\b/m);
  });

  it("bundles lib/ helpers, zod and the SDK runtime, imported across files", async () => {
    const files = {
      "scenario.ts": `import { tool, type RolloutContext } from "rollbook";
import { z } from "zod";
import { shout } from "./lib/text";
export const taskSchema = z.object({ word: z.string() });
export type Task = z.infer<typeof taskSchema>;
const echo = tool({ name: "echo", description: "Echo", parameters: z.object({ text: z.string() }), execute: ({ text }) => shout(text) });
export default async function rollout(ctx: RolloutContext<Task>) {
  return echo.name + ctx.task.word;
}
`,
      "reward.ts": `import type { RewardInput } from "rollbook";
import type { Task } from "./scenario";
import { shout } from "./lib/text";
export default function reward({ task, output }: RewardInput<Task, string>) {
  return output === shout(task.word) ? 1 : 0;
}
`,
      "lib/text.ts": `export const shout = (s: string): string => s.toUpperCase();
`,
    };
    const r = await compileExperiment(files);
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
    expect(code(r.compiled.js)).toContain("toUpperCase");
    const typed = await compileExperiment({ ...files, "lib/text.ts": `export const shout = (s: string): number => s.length;
` });
    expect(typed.ok).toBe(false);
    // The helper's new type reaches reward.ts through the import: comparing a string to a number.
    if (!typed.ok) expect(typed.diagnostics[0]).toMatchObject({ file: "reward.ts", line: 5 });
  });

  it("types tool arguments from the zod schema", async () => {
    const scenario = `import { tool } from "rollbook";
import { z } from "zod";
export const add = tool({ name: "add", description: "Add", parameters: z.object({ a: z.number() }), execute: ({ a }) => a.toUpperCase() });
export default async function rollout() { return 1; }
`;
    const r = await compileExperiment({ ...template, "scenario.ts": scenario, "reward.ts": "export default function reward() { return 0; }\n" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]).toMatchObject({ file: "scenario.ts", line: 3, message: expect.stringContaining("toUpperCase") });
  });

  it("names an import of a file the experiment does not have", async () => {
    const r = await compileExperiment({ ...template, "reward.ts": `import { x } from "./lib/missing";\nexport default function reward() { return x; }\n` });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]).toMatchObject({ file: "reward.ts", line: 1, message: expect.stringContaining("no such file in this experiment") });
  });

  it("is deterministic and fast once warm", async () => {
    await compileExperiment(template);
    const t0 = performance.now();
    const a = await compileExperiment(template);
    const reward = (n: number) => `export default function reward({ output }: { output: unknown }) {\n  return String(output).length / ${n};\n}\n`;
    const a0 = await compileExperiment({ ...template, "reward.ts": reward(12) });
    const b = await compileExperiment({ ...template, "reward.ts": reward(20) });
    const c = await compileExperiment({ ...template, "reward.ts": reward(12) + "\n// a comment changes nothing that runs\n" });
    const ms = (performance.now() - t0) / 4;
    expect(a.ok && a0.ok && b.ok && c.ok).toBe(true);
    if (a0.ok && b.ok && c.ok) {
      expect(a0.compiled.hash).not.toBe(b.compiled.hash);
      expect(a0.compiled.hash).toBe(c.compiled.hash);
    }
    expect(ms).toBeLessThan(1000);
  });

  it("reports a type error in reward.ts at its file and line", async () => {
    const reward = template["reward.ts"]!.replace("const word = task.word.toLowerCase();", "const word: number = task.word;");
    const line = reward.split("\n").findIndex((l) => l.includes("const word: number")) + 1;
    const r = await compileExperiment({ ...template, "reward.ts": reward });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const d = r.diagnostics.find((x) => x.message.includes("not assignable to type 'number'"));
    expect(d).toMatchObject({ file: "reward.ts", line, severity: "error" });
    expect(d?.column).toBe(9);
  });

  it("reports a syntax error in scenario.ts at its line", async () => {
    const scenario = template["scenario.ts"]!.replace("return reply.content;", "return reply.content +;");
    const line = scenario.split("\n").findIndex((l) => l.includes("reply.content +;")) + 1;
    const r = await compileExperiment({ ...template, "scenario.ts": scenario });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics[0]).toMatchObject({ file: "scenario.ts", line });
  });

  it("refuses module imports with a diagnostic at the import", async () => {
    const scenario = `import fs from "fs";\nimport type { RolloutContext } from "rollbook";\n` + template["scenario.ts"]!.replace(/^import type .*\n/, "");
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

  it("reuses a compile of exactly the same files and compiles again after any change, failures never cached", async () => {
    const first = await compileExperiment({ ...template });
    const again = await compileExperiment({ ...template });
    expect(first.ok && again.ok).toBe(true);
    if (!first.ok || !again.ok) return;
    expect(again.compiled).toBe(first.compiled); // the memo's entry, not a second bundle
    const edited = await compileExperiment({ ...template, "reward.ts": `${template["reward.ts"]}\n// edited\n` });
    expect(edited.ok).toBe(true);
    if (!edited.ok) return;
    expect(edited.compiled).not.toBe(first.compiled);
    const broken = { ...template, "reward.ts": "export default 42 as unknown as string; const x: number = 'no';" };
    expect((await compileExperiment(broken)).ok).toBe(false);
    expect((await compileExperiment(broken)).ok).toBe(false);
  });
});
