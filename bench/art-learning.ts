/**
 * Learning benchmark for the OpenPipe ART backend: does an unmodified ART script learn when Rollbook trains it?
 * Starts a real runner (its real engine: SmolLM2-135M-Instruct on CPU), a fresh Postgres database and the
 * /api/art/v1 handler on a local HTTP server, makes a workspace API token, then runs
 * examples/art/say_the_word.py with the real openpipe-art (scripts/art-venv.sh) once per seed, one after
 * another, and prints each seed's greedy validation reward curve (step 0, every 4 steps, the last step).
 *
 *   node --no-node-snapshot --import tsx bench/art-learning.ts [--seeds 42,7] [--steps 12] [--json out.json] [--ci]
 *
 * --ci   exit non-zero unless every seed's last validation reward beats its step-0 reward by ≥ 0.15
 * Needs Postgres at TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres); the runner and
 * the web handler bind port 0.
 */
import { execFile, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startArtStack } from "@/server/test/art-stack";

const MARGIN = 0.15;
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
const TOKEN = `art-learning-bench-${process.pid}-0123456789abcdef`;

const exec = promisify(execFile);
const venv = await exec("bash", [path.join(root, "scripts/art-venv.sh")], { maxBuffer: 10 * 1024 * 1024 });
const python = venv.stdout.trim().split("\n").at(-1)!;

const stack = await startArtStack({ name: "art-learning-bench", runnerToken: TOKEN });
const { webUrl, apiKey } = stack;

interface SeedResult {
  seed: number;
  curve: Record<string, number>;
  seconds: number;
  load: number[];
}

/** One seed: the example as a user runs it, its stdout passed through, its last line the curve. */
function runSeed(seed: number): Promise<SeedResult> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(python, [path.join(root, "examples/art/say_the_word.py")], {
      env: { ...process.env, ROLLBOOK_URL: webUrl, ROLLBOOK_API_KEY: apiKey, ART_MODEL_NAME: `say-the-word-seed${seed}`, STEPS: String(steps), SEED: String(seed), LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled", TQDM_DISABLE: "1" },
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
      const last = JSON.parse(out.trim().split("\n").at(-1)!) as { val_reward: Record<string, number> };
      resolve({ seed, curve: last.val_reward, seconds: (performance.now() - t0) / 1000, load: loadavg() });
    });
  });
}

const results: SeedResult[] = [];
try {
  for (const seed of seeds) results.push(await runSeed(seed));
} finally {
  await stack.close();
}

const table = results.map((r) => {
  const points = Object.entries(r.curve).map(([s, v]) => [Number(s), v] as const).sort((a, b) => a[0] - b[0]);
  const first = points[0]![1];
  const last = points.at(-1)![1];
  return { seed: r.seed, curve: points.map(([s, v]) => `${s}:${v.toFixed(3)}`).join(" "), rise: last - first, seconds: Math.round(r.seconds), load: r.load.map((l) => l.toFixed(2)).join("/") };
});
console.log("\nART say_the_word.py through Rollbook (greedy validation reward, 6 words)");
console.log("| seed | validation reward by step | rise | time (s) | load 1/5/15 |\n|---|---|---|---|---|");
for (const t of table) console.log(`| ${t.seed} | ${t.curve} | ${t.rise >= 0 ? "+" : ""}${t.rise.toFixed(3)} | ${t.seconds} | ${t.load} |`);
const summary = { bench: "art-learning", example: "examples/art/say_the_word.py", steps, seeds, results, table };
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(summary, null, 2) + "\n");
console.log(`ART_LEARNING_JSON ${JSON.stringify(summary)}`);
if (ci && table.some((t) => t.rise < MARGIN)) {
  console.error(`a seed rose by less than ${MARGIN}: ${table.filter((t) => t.rise < MARGIN).map((t) => t.seed).join(", ")}`);
  process.exit(1);
}
process.exit(0);
