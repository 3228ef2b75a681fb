/**
 * Learning benchmark for the Tinker door: does a tinker-cookbook-shaped RL loop learn when Rollbook serves
 * the Tinker API? Starts a real runner (its real engine: SmolLM2-135M-Instruct on CPU), a fresh Postgres
 * database and /api/tinker on a local HTTP server, makes a workspace API token, then runs
 * examples/tinker/rl_loop.py with the real `tinker` SDK 0.38.0 (scripts/tinker-venv.sh) once per seed, one
 * after another, and prints each seed's sampled reward by step (temperature 1, the loop's own samples).
 *
 *   node --no-node-snapshot --import tsx bench/tinker-learning.ts [--seeds 42,7] [--steps 12] [--json out.json] [--ci]
 *
 * rise = mean reward of the last 3 steps − mean of the first 3. --ci: exit non-zero unless every seed's rise
 * is ≥ 0.15. Needs Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres).
 */
import { execFile, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { homedir, loadavg } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startArtStack } from "@/server/test/art-stack";

const MARGIN = 0.15;
const MODEL = "SmolLM2-135M-Instruct";
const root = path.resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const seeds = (flag("--seeds") ?? "42,7").split(",").map(Number);
const steps = Number(flag("--steps") ?? "12");
const jsonOut = flag("--json");
const ci = args.includes("--ci");
const TOKEN = `tinker-learning-bench-${process.pid}-0123456789abcdef`;
const modelDir = path.join(process.env.ROLLBOOK_MODEL_CACHE ?? path.join(homedir(), ".cache/rollbook/models"), MODEL);

const exec = promisify(execFile);
const venv = await exec("bash", [path.join(root, "scripts/tinker-venv.sh")], { maxBuffer: 10 * 1024 * 1024 });
const python = venv.stdout.trim().split("\n").at(-1)!;

const stack = await startArtStack({ name: "tinker-learning-bench", runnerToken: TOKEN });

interface SeedResult {
  seed: number;
  rewards: number[];
  seconds: number;
  load: number[];
}

function runSeed(seed: number): Promise<SeedResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(python, [path.join(root, "examples/tinker/rl_loop.py")], {
      env: { ...process.env, ROLLBOOK_URL: stack.webUrl, ROLLBOOK_API_KEY: stack.apiKey, BASE_MODEL: MODEL, TOKENIZER: modelDir, HF_HUB_OFFLINE: "1", NAME: `rl-loop-seed${seed}`, STEPS: String(steps), SEED: String(seed) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      process.stdout.write(`[seed ${seed}] ${d.toString()}`);
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`seed ${seed}: the example exited ${code}`));
      const last = JSON.parse(out.trim().split("\n").at(-1)!) as { reward: number[] };
      resolve({ seed, rewards: last.reward, seconds: (performance.now() - t0) / 1000, load: loadavg() });
    });
  });
}

const results: SeedResult[] = [];
try {
  for (const seed of seeds) results.push(await runSeed(seed));
} finally {
  await stack.close();
}

const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const table = results.map((r) => ({
  seed: r.seed,
  curve: r.rewards.map((v, i) => `${i + 1}:${v.toFixed(2)}`).join(" "),
  rise: avg(r.rewards.slice(-3)) - avg(r.rewards.slice(0, 3)),
  seconds: Math.round(r.seconds),
  load: r.load.map((l) => l.toFixed(2)).join("/"),
}));
console.log("\nTinker rl_loop.py through Rollbook (sampled reward by step, 4 prompts × 8 samples)");
console.log("| seed | reward by step | rise (last 3 − first 3) | time (s) | load 1/5/15 |\n|---|---|---|---|---|");
for (const t of table) console.log(`| ${t.seed} | ${t.curve} | ${t.rise >= 0 ? "+" : ""}${t.rise.toFixed(3)} | ${t.seconds} | ${t.load} |`);
const summary = { bench: "tinker-learning", example: "examples/tinker/rl_loop.py", steps, seeds, results, table };
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(summary, null, 2) + "\n");
console.log(`TINKER_LEARNING_JSON ${JSON.stringify(summary)}`);
if (ci && table.some((t) => t.rise < MARGIN)) {
  console.error(`a seed rose by less than ${MARGIN}: ${table.filter((t) => t.rise < MARGIN).map((t) => t.seed).join(", ")}`);
  process.exit(1);
}
process.exit(0);
