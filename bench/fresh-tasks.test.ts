/**
 * The fresh tasks of docs/benchmarks.md § "Defaults that learn" measure the product's defaults only if
 * they set no trainer field, and measure learning only if their rewards rank replies as their comments
 * say. Each is validated as a run start validates it (TypeScript, esbuild, isolated-vm, taskSchema).
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readExperimentDir } from "@/features/experiments/server";
import { validateExperiment } from "../gpu-runner/src/experiment/validate";

const root = path.join(import.meta.dirname, "fresh-tasks");
const tasks = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);

describe("fresh tasks", () => {
  it("are the three of the bench row", () => expect(tasks.sort()).toEqual(["digits", "shout", "three-words"]));

  it.each(tasks)("%s validates, sets no trainer field and runs 15 steps × 4 groups × 4 rollouts", async (name) => {
    const files = await readExperimentDir(path.join(root, name));
    const r = await validateExperiment(files, "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.tasks.train).toHaveLength(24);
    expect(r.tasks.val).toHaveLength(8);
    const config = JSON.parse(files["config.json"]!) as Record<string, unknown>;
    expect(config).not.toHaveProperty("trainer");
    expect(config).toMatchObject({ num_steps: 15, groups_per_step: 4, rollouts_per_group: 4, eval_every: 5 });
  });
});

// Loaded by a computed path: the tasks import "rollbook", which only an experiment's own type check knows,
// so the root project's tsc must not follow them (tsconfig.json excludes bench/fresh-tasks).
type Reward = (input: { task: unknown; output: string }) => { reward: number };
const rewardOf = async (name: string): Promise<Reward> => ((await import(path.join(root, name, "reward.ts"))) as { default: Reward }).default;
const [digits, shout, threeWords] = await Promise.all(["digits", "shout", "three-words"].map(rewardOf));
const score = (fn: Reward | undefined, task: unknown, output: string) => fn!({ task, output }).reward;

describe("fresh tasks' rewards", () => {
  it("digits: the number alone beats it in a sentence, which beats any reply without it", () => {
    const t = { words: "one thousand", number: 1000 };
    expect(score(digits, t, "1,000")).toBe(1);
    expect(score(digits, t, "1000.")).toBe(1);
    expect(score(digits, t, "It is 1000")).toBeCloseTo(1 / 3);
    expect(score(digits, t, "100")).toBe(0);
    expect(score(digits, t, "So the number one thousand is written as 1000 in digits")).toBeGreaterThan(score(digits, t, "100 200"));
    expect(score(digits, t, "one thousand")).toBe(0);
    expect(score(digits, t, "")).toBe(0);
  });

  it("shout: the share of capital letters", () => {
    const t = { name: "Anna" };
    expect(score(shout, t, "HELLO, ANNA!")).toBe(1);
    expect(score(shout, t, "Hello")).toBeCloseTo(1 / 5);
    expect(score(shout, t, "hi ANNA")).toBeCloseTo(4 / 6);
    expect(score(shout, t, "123 !")).toBe(0);
  });

  it("three-words: exactly three scores 1, more or fewer less", () => {
    const t = { thing: "the sea" };
    expect(score(threeWords, t, "Vast, blue, deep.")).toBe(1);
    expect(score(threeWords, t, "Salt-sprayed endless blue")).toBe(1);
    expect(score(threeWords, t, "Blue")).toBeCloseTo(1 / 3);
    expect(score(threeWords, t, "The sea is vast and blue and deep.")).toBeCloseTo(3 / 8);
    expect(score(threeWords, t, " ... ")).toBe(0);
  });
});
