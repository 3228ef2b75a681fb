/**
 * One validation per start, over real parts (TypeScript, esbuild, isolated-vm): every file's problems
 * together, task rows checked against the scenario's taskSchema at their line, and experiments up to the
 * documented 8 MB.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { ExperimentFiles } from "../../../contracts";
import { validateExperiment } from "./validate";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATE), "utf8");
const template: ExperimentFiles = {
  "scenario.ts": read("scenario.ts"),
  "reward.ts": read("reward.ts"),
  "tasks.jsonl": read("tasks.jsonl"),
  "config.json": read("config.json"),
};

const SCHEMA_SCENARIO = `import type { RolloutContext } from "rollbook";
import { z } from "zod";
export const taskSchema = z.object({ question: z.string(), answer: z.number().int() });
export default async function rollout(ctx: RolloutContext<z.infer<typeof taskSchema>>) {
  return (await ctx.chat([{ role: "user", content: ctx.task.question }])).content;
}
`;
const SCHEMA_REWARD = `export default function reward() { return 0; }\n`;

function rows(n: number, bad: Map<number, string> = new Map()): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) lines.push(bad.get(i) ?? JSON.stringify({ question: `What is ${i} + ${i}?`, answer: 2 * i, ...(i % 10 === 0 ? { split: "val" } : {}) }));
  return lines.join("\n") + "\n";
}

describe("validateExperiment", () => {
  it("passes the template, once, with its exports described", async () => {
    const r = await validateExperiment(template, "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.tasks.train).toHaveLength(24);
    expect(r.compiled.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(r.exports).toEqual({ scenario: true, reward: true, groupReward: false, taskSchema: "zod" });
  });

  it("checks the template's tasks against its taskSchema: a misspelt field is named at its line", async () => {
    const lines = template["tasks.jsonl"].split("\n");
    lines[2] = '{"wrd": "x"}';
    const r = await validateExperiment({ ...template, "tasks.jsonl": lines.join("\n") }, "train");
    expect(r.ok).toBe(false);
    expect(r.diagnostics).toEqual([
      expect.objectContaining({ file: "tasks.jsonl", line: 3, severity: "error", message: expect.stringMatching(/^tasks\.jsonl line 3, field "word": does not fit taskSchema: /) }),
    ]);
    // Other fields a row carries are kept, for a scenario or reward that reads them.
    const extra = await validateExperiment({ ...template, "tasks.jsonl": '{"word": "apple", "hint": "a fruit"}\n' }, "train");
    if (!extra.ok) throw new Error(JSON.stringify(extra.diagnostics));
  });

  it("reports problems of every file together", async () => {
    const r = await validateExperiment(
      { ...template, "reward.ts": template["reward.ts"] + "\nconst n: number = 'x';\n", "tasks.jsonl": "{oops\n", "config.json": '{ "seed": -1 }' },
      "train",
    );
    expect(r.ok).toBe(false);
    expect(new Set(r.diagnostics.map((d) => d.file))).toEqual(new Set(["reward.ts", "tasks.jsonl", "config.json"]));
  });

  it("reports a row that does not fit taskSchema beside a config error and a type error (not one kind at a time)", async () => {
    const lines = template["tasks.jsonl"].split("\n");
    lines[2] = '{"wrd": "x"}';
    const r = await validateExperiment(
      { ...template, "reward.ts": template["reward.ts"] + "\nconst n: number = 'x';\n", "tasks.jsonl": lines.join("\n"), "config.json": '{ "seed": -1 }' },
      "train",
    );
    expect(r.ok).toBe(false);
    expect(r.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: "reward.ts", severity: "error" }),
        expect.objectContaining({ file: "config.json", severity: "error", message: expect.stringMatching(/^seed: /) }),
        expect.objectContaining({ file: "tasks.jsonl", line: 3, message: expect.stringMatching(/^tasks\.jsonl line 3, field "word": does not fit taskSchema/) }),
      ]),
    );
  });

  it("finds the one bad row of 10,000 against taskSchema, at its line and field", async () => {
    const files = { ...template, "scenario.ts": SCHEMA_SCENARIO, "reward.ts": SCHEMA_REWARD, "tasks.jsonl": rows(10_000, new Map([[5030, JSON.stringify({ question: "What is 1 + 1?", answer: "two" })]])) };
    const r = await validateExperiment(files, "train");
    expect(r.ok).toBe(false);
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]).toMatchObject({ file: "tasks.jsonl", line: 5031, severity: "error" });
    expect(r.diagnostics[0]!.message).toMatch(/^tasks\.jsonl line 5031, field "answer": does not fit taskSchema: answer: .*expected number/);

    const ok = await validateExperiment({ ...files, "tasks.jsonl": rows(10_000) }, "train");
    if (!ok.ok) throw new Error(JSON.stringify(ok.diagnostics));
    expect(ok.exports.taskSchema).toBe("zod");
    expect(ok.tasks.train.length + ok.tasks.val.length).toBe(10_000);
  });

  it("caps the list of bad rows, and counts the rest", async () => {
    const bad = new Map(Array.from({ length: 300 }, (_, i) => [i * 3, JSON.stringify({ question: 1, answer: 1 })] as const));
    const r = await validateExperiment({ ...template, "scenario.ts": SCHEMA_SCENARIO, "reward.ts": SCHEMA_REWARD, "tasks.jsonl": rows(1000, bad) }, "train");
    expect(r.ok).toBe(false);
    expect(r.diagnostics).toHaveLength(51);
    expect(r.diagnostics.at(-1)!.message).toBe("250 more task rows do not fit taskSchema");
  });

  it("validates a 5 MB experiment (files travel in bodies; the cap is 8 MB)", async () => {
    const big = rows(95_000);
    expect(big.length).toBeGreaterThan(5_000_000);
    const t0 = performance.now();
    const r = await validateExperiment({ ...template, "scenario.ts": SCHEMA_SCENARIO, "reward.ts": SCHEMA_REWARD, "tasks.jsonl": big }, "dry-run");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics.slice(0, 3)));
    expect(r.tasks.train.length + r.tasks.val.length).toBe(95_000);
    console.log(`validated ${(big.length / 1e6).toFixed(1)} MB of tasks in ${Math.round(performance.now() - t0)} ms`);
  });

  it("reports a module that throws while loading, at its line", async () => {
    const r = await validateExperiment({ ...template, "lib/boom.ts": `export const x = 1;\nthrow new Error("lib exploded");\n`, "reward.ts": `import { x } from "./lib/boom";\n${template["reward.ts"]}\nexport const y = x;\n` }, "train");
    expect(r.ok).toBe(false);
    expect(r.diagnostics[0]).toMatchObject({ file: "lib/boom.ts", line: 2, message: expect.stringContaining("lib exploded") });
  });
});
