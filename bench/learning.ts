/**
 * Learning benchmark: does pressing Train make the model better? Starts a real runner (which starts the
 * real engine with SmolLM2-135M-Instruct on CPU), trains the shipped `say-the-word` template with fixed
 * seeds, and prints the validation reward curve (eval before training, every eval_every steps, and after
 * the last step) with per-step timings.
 *
 *   node --no-node-snapshot --import tsx bench/learning.ts [--steps 12] [--override '{"trainer":{"learning_rate":1e-3}}'] [--ci]
 *
 * With --ci it exits non-zero unless the final validation reward beats the base model's by a clear margin.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createRunnerClient } from "../gpu-runner/src/client";
import type { RunEvent } from "../gpu-runner/contracts";

const root = path.resolve(import.meta.dirname, "..");
const args = process.argv.slice(2);
const ci = args.includes("--ci");
const stepsArg = args.indexOf("--steps");
const steps = stepsArg >= 0 ? Number(args[stepsArg + 1]) : 12;
const MARGIN = 0.2;

const overrideArg = args.indexOf("--override");
const override: Record<string, unknown> = overrideArg >= 0 ? JSON.parse(args[overrideArg + 1] ?? "{}") : {};

const template = (f: string) => readFileSync(path.join(root, "templates/say-the-word", f), "utf8");
const config = deepMerge({ ...JSON.parse(template("config.json")), num_steps: steps }, override);
console.log(`config: ${JSON.stringify(config)}`);

function deepMerge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    const b = out[k];
    out[k] =
      v && typeof v === "object" && !Array.isArray(v) && b && typeof b === "object" && !Array.isArray(b)
        ? deepMerge(b as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

const runsDir = mkdtempSync(path.join(tmpdir(), "rollbook-bench-"));
const runnerPort = 4300 + Math.floor(Math.random() * 500);
const enginePort = 8300 + Math.floor(Math.random() * 500);
const token = `bench-${Date.now()}`;

const runner = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "gpu-runner/src/server.ts"], {
  cwd: root,
  env: {
    ...process.env,
    RUNNER_PORT: String(runnerPort),
    ENGINE_PORT: String(enginePort),
    RUNNER_TOKEN: token,
    ROLLBOOK_RUNS_DIR: runsDir,
  },
  stdio: ["ignore", "pipe", "inherit"],
});

async function waitForReady(): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    let out = "";
    runner.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("RUNNER READY")) resolve();
    });
    runner.once("exit", (code) => reject(new Error(`runner exited early with code ${code}`)));
  });
}

async function main(): Promise<number> {
  const t0 = Date.now();
  await waitForReady();
  const client = createRunnerClient(`http://127.0.0.1:${runnerPort}`, token);
  const runId = `bench-${Date.now()}`;
  const started = await client.start.mutate({
    run_id: runId,
    kind: "train",
    resume: false,
    files: {
      "scenario.ts": template("scenario.ts"),
      "reward.ts": template("reward.ts"),
      "tasks.jsonl": template("tasks.jsonl"),
      "config.json": JSON.stringify(config),
    },
  });
  if (!started.ok) throw new Error(`run refused: ${started.error} ${JSON.stringify(started.diagnostics)}`);

  const evals: { step: number; reward: number | null }[] = [];
  let finished: Extract<RunEvent, { type: "run.finished" }> | null = null;
  await new Promise<void>((resolve, reject) => {
    const sub = client.events.subscribe(
      { run_id: runId, after_seq: 0 },
      {
        onData: (tracked) => {
          const ev = ("data" in tracked ? tracked.data : tracked) as RunEvent;
          if (ev.type === "step.finished") {
            const p = ev.payload;
            const tr = p.trainer;
            console.log(
              `step ${String(p.step).padStart(2)}  reward ${fmt(p.reward_mean)} ± ${fmt(p.reward_std_within_group)}  ` +
                `trainable ${p.groups_trainable}  loss ${fmt(tr?.loss)}  kl ${fmt(tr?.kl)}  probs_corr ${fmt(tr?.probs_corr)}  ` +
                `rollout ${p.rollout_s.toFixed(1)}s  train ${p.train_s.toFixed(1)}s  step ${p.step_s.toFixed(1)}s`,
            );
          } else if (ev.type === "eval.finished") {
            evals.push({ step: ev.payload.step, reward: ev.payload.reward_mean });
            console.log(`eval @ step ${ev.payload.step}: validation reward ${fmt(ev.payload.reward_mean)} (${ev.payload.model})`);
          } else if (ev.type === "run.finished") {
            finished = ev;
            sub.unsubscribe();
            resolve();
          }
        },
        onError: reject,
      },
    );
  });

  const done = finished as Extract<RunEvent, { type: "run.finished" }> | null;
  console.log(`\nvalidation reward curve (step: reward): ${evals.map((e) => `${e.step}: ${fmt(e.reward)}`).join("  ")}`);
  console.log(`total ${((Date.now() - t0) / 1000).toFixed(0)} s, run ${done?.payload.status ?? "?"}`);
  if (done?.payload.status !== "completed") {
    console.error(`run did not complete: ${done?.payload.error}`);
    return 1;
  }
  const first = evals[0]?.reward ?? null;
  const last = evals[evals.length - 1]?.reward ?? null;
  if (first === null || last === null) {
    console.error("no validation rewards recorded");
    return 1;
  }
  const rose = last - first;
  console.log(`validation reward ${fmt(first)} → ${fmt(last)} (${rose >= 0 ? "+" : ""}${rose.toFixed(3)})`);
  if (ci && rose < MARGIN) {
    console.error(`learning check failed: validation reward rose by ${rose.toFixed(3)} < ${MARGIN}`);
    return 1;
  }
  return 0;
}

function fmt(x: number | null | undefined): string {
  return x === null || x === undefined ? "  -  " : x.toFixed(3);
}

main()
  .then((code) => (process.exitCode = code))
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    runner.kill("SIGTERM");
    setTimeout(() => rmSync(runsDir, { recursive: true, force: true }), 2000).unref();
  });
