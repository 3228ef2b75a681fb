/**
 * The seeded pathologies of the flag corpus (bench/flag-corpus.ts) are experiments a run start accepts
 * (TypeScript, esbuild, isolated-vm, taskSchema), and their rewards are broken the way their names say.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readExperimentDir } from "@/features/experiments/server";
import { validateExperiment } from "../gpu-runner/src/experiment/validate";

const root = path.join(import.meta.dirname, "flag-corpus", "pathologies");
const names = readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name);

describe("flag-corpus pathologies", () => {
  it("are the four seeded ones", () => expect(names.sort()).toEqual(["collapse-low", "exceptions", "kl-blowup", "length-hack"]));

  it.each(names)("%s validates as a train run", async (name) => {
    const r = await validateExperiment(await readExperimentDir(path.join(root, name)), "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  });
});

// Loaded by a computed path: they import "rollbook", which only an experiment's own type check knows.
type Reward = (input: { task: unknown; output: string }) => { reward: number; metrics?: Record<string, number> };
const rewardOf = async (name: string): Promise<Reward> => ((await import(path.join(root, name, "reward.ts"))) as { default: Reward }).default;

describe("flag-corpus pathologies' rewards", () => {
  it("length-hack pays a long reply more than exactly the word, which it still pays for", async () => {
    const reward = await rewardOf("length-hack");
    const t = { word: "tunnel" };
    const long = reward({ task: t, output: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen" });
    const exact = reward({ task: t, output: "Tunnel." });
    expect(long.reward).toBeGreaterThan(exact.reward);
    expect(exact.reward).toBeGreaterThan(reward({ task: t, output: "no" }).reward);
    expect(exact.metrics).toMatchObject({ exact: 1 });
  });

  it("collapse-low answers 0.2 whatever the reply", async () => {
    const reward = await rewardOf("collapse-low");
    expect(new Set(["tunnel", "A tunnel.", "", "no"].map((o) => reward({ task: { word: "tunnel" }, output: o }).reward))).toEqual(new Set([0.2]));
  });
});
