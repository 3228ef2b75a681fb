/**
 * Learning benchmark: does pressing Train make the model better? Starts a real runner (which starts the
 * real engine with SmolLM2-135M-Instruct on CPU), trains a template folder once per seed (one after
 * another, on the same runner and engine), and prints the greedy validation reward curve of each seed
 * (eval before training, every eval_every steps and after the last step), what the rollouts said, and
 * per-step timings.
 *
 *   node --no-node-snapshot --import tsx bench/learning.ts \
 *     [--template templates/say-the-word] [--seeds 42,7,123,1,2] [--steps N] \
 *     [--override '{"trainer":{"learning_rate":1e-3}}'] [--ci] [--json out.json] [--keep-runs DIR] [--quiet]
 *
 * --seeds     default: the template's own seed (config.json), i.e. exactly what a newcomer's Train runs
 * --steps     default: the template's num_steps
 * --ci        exit non-zero unless every seed's final validation reward beats its step-0 reward by ≥ 0.2
 * --json      also write the results (config, per-seed curves, times, load averages) to this file, after
 *             every seed (marked "partial" until the last); the same object is always printed as one
 *             `LEARNING_JSON {...}` line at the end
 * --keep-runs keep each run's events.jsonl (every rollout, every step) in DIR instead of a temp folder
 * --quiet     no per-step lines, only evals and the final table
 * --tag T     add T to the run ids (the same seed samples the same replies whatever the run id: another
 *             seed draws other samples)
 *
 * Ports: the runner binds port 0 (it prints the port it got); the engine's port is found by binding port
 * 0 here and releasing it just before the engine starts.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { createRunnerClient } from "../gpu-runner/src/client";
import { readExperimentDir } from "@/features/experiments/server";
import { BUNDLED_MCP_SERVERS, type RunEvent, type Trajectory } from "../contracts";

const MARGIN = 0.2;
const root = path.resolve(import.meta.dirname, "..");

// ---------------------------------------------------------------------------------------------------------
// Arguments

const args = process.argv.slice(2);
function flag(name: string): string | undefined {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const v = args[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`${name} needs a value`);
  return v;
}
const ci = args.includes("--ci");
const quiet = args.includes("--quiet");
const templateDir = path.resolve(root, flag("--template") ?? "templates/say-the-word");
const templateName = path.basename(templateDir);
const jsonOut = flag("--json");
const keepRuns = flag("--keep-runs");
const override: Record<string, unknown> = JSON.parse(flag("--override") ?? "{}");
const tag = flag("--tag");

const read = (f: string) => readFileSync(path.join(templateDir, f), "utf8");
// Every file of the template (lib/ helpers included), read as the web server reads a template.
const files = await readExperimentDir(templateDir);
const shipped = JSON.parse(read("config.json")) as Record<string, unknown>;
const stepsArg = flag("--steps");
const baseConfig = deepMerge({ ...shipped, ...(stepsArg ? { num_steps: Number(stepsArg) } : {}) }, override);
const seeds = (flag("--seeds") ?? String(baseConfig.seed ?? 42)).split(",").map((s) => {
  const n = Number(s.trim());
  if (!Number.isInteger(n) || n < 0) throw new Error(`--seeds: ${s} is not a non-negative integer`);
  return n;
});

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

// ---------------------------------------------------------------------------------------------------------
// Runner

/** A port that was free a moment ago: bind port 0, read what the OS gave, release it. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error("no port from the OS"))));
    });
  });
}

const runsDir = keepRuns ? path.resolve(keepRuns) : mkdtempSync(path.join(tmpdir(), "rollbook-bench-"));
mkdirSync(runsDir, { recursive: true });
const token = `bench-${process.pid}-${Date.now()}`;
let runner: ReturnType<typeof spawn> | null = null;

async function startRunner(): Promise<number> {
  const enginePort = await freePort();
  const child = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", "gpu-runner/src/server.ts"], {
    cwd: root,
    env: { ...process.env, RUNNER_PORT: "0", ENGINE_PORT: String(enginePort), RUNNER_TOKEN: token, ROLLBOOK_RUNS_DIR: runsDir },
    stdio: ["ignore", "pipe", "inherit"],
  });
  runner = child;
  return new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /RUNNER READY (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`runner exited early with code ${code}`)));
  });
}

// ---------------------------------------------------------------------------------------------------------
// One seed

interface EvalPoint {
  step: number;
  reward: number | null;
  /** Mean of each metric the reward function returned, over the validation rollouts that returned it. */
  metrics: Record<string, number>;
  replies: string[];
}
interface SeedResult {
  seed: number;
  run_id: string;
  status: string;
  error: string | null;
  evals: EvalPoint[];
  steps: { step: number; reward_mean: number | null; groups_trainable: number; step_s: number; metrics: Record<string, number>; top_replies: string }[];
  base: number | null;
  final: number | null;
  rise: number | null;
  learned: boolean;
  total_s: number;
  loadavg_start: number[];
  loadavg_end: number[];
}

/** Mean of every metric over the rollouts that reported it (e.g. well_formed_call → the rate of good calls). */
function meanMetrics(ts: Trajectory[]): Record<string, number> {
  const sums = new Map<string, [number, number]>();
  for (const t of ts)
    for (const [k, v] of Object.entries(t.metrics)) {
      const [s, n] = sums.get(k) ?? [0, 0];
      sums.set(k, [s + v, n + 1]);
    }
  return Object.fromEntries([...sums].map(([k, [s, n]]) => [k, Number((s / n).toFixed(4))]));
}
function showMetrics(m: Record<string, number>): string {
  return Object.entries(m).map(([k, v]) => `${k} ${v.toFixed(3)}`).join("  ");
}

/** What the model said, short: the reply (first line, 40 chars) or the rollout's error kind. */
function replyOf(t: Trajectory): string {
  if (t.error) return `<${t.error.kind}>`;
  const last = [...t.messages].reverse().find((m) => m.role === "assistant");
  const text = (last?.content ?? "").replace(/\s+/g, " ").trim();
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

/** The most common replies of a step, e.g. `"Falcon" ×12 · "Falcon." ×9 · (11 others)`. */
function topReplies(replies: string[], n = 3): string {
  const counts = new Map<string, number>();
  for (const r of replies) counts.set(r, (counts.get(r) ?? 0) + 1);
  const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1]);
  const shown = sorted.slice(0, n).map(([r, c]) => `${JSON.stringify(r)} ×${c}`);
  const rest = sorted.slice(n).reduce((s, [, c]) => s + c, 0);
  return shown.join(" · ") + (rest ? ` · (${rest} others)` : "");
}

async function runSeed(client: ReturnType<typeof createRunnerClient>, seed: number): Promise<SeedResult> {
  const config = { ...baseConfig, seed };
  const loadavgStart = loadavg().map((x) => Number(x.toFixed(2)));
  const t0 = Date.now();
  // A fixed run id per (template, seed), so a re-run replaces its folder. Sampling seeds derive from the
  // seed and each call's coordinates, not from the run id (gpu-runner/src/rollout/seed.ts).
  const runId = `learn-${templateName}-s${seed}${tag ? `-${tag}` : ""}`.replace(/[^A-Za-z0-9_-]/g, "_");
  rmSync(path.join(runsDir, runId), { recursive: true, force: true });
  const started = await client.start.mutate({
    run_id: runId,
    workspace_id: "bench",
    // What a workspace has registered from the start (the mcp-agent template names server-everything).
    mcp_servers: { ...BUNDLED_MCP_SERVERS },
    kind: "train",
    resume: false,
    files: { ...files, "config.json": JSON.stringify(config) },
  });
  if (!started.ok) throw new Error(`run refused: ${started.error} ${JSON.stringify(started.diagnostics)}`);
  console.log(`\n=== ${templateName}, seed ${seed} (run ${runId}), load average ${loadavgStart.join(" ")}`);

  const evals: EvalPoint[] = [];
  const steps: SeedResult["steps"] = [];
  const rollouts = new Map<number, Trajectory[]>(); // train rollouts by step
  const evalRollouts = new Map<number, Trajectory[]>();
  let finished: Extract<RunEvent, { type: "run.finished" }> | null = null;
  await new Promise<void>((resolve, reject) => {
    const onExit = () => reject(new Error("runner exited during the run"));
    runner?.once("exit", onExit);
    const sub = client.events.subscribe(
      { run_id: runId, after_seq: 0 },
      {
        onData: (tracked) => {
          const ev = ("data" in tracked ? tracked.data : tracked) as RunEvent;
          if (ev.type === "rollout.finished") {
            const t = ev.payload;
            const m = t.split === "val" ? evalRollouts : rollouts;
            m.set(t.step, [...(m.get(t.step) ?? []), t]);
          } else if (ev.type === "step.finished") {
            const p = ev.payload;
            const tr = p.trainer;
            const stepRollouts = rollouts.get(p.step) ?? [];
            const top = topReplies(stepRollouts.map(replyOf));
            const metrics = meanMetrics(stepRollouts);
            rollouts.delete(p.step);
            steps.push({ step: p.step, reward_mean: p.reward_mean, groups_trainable: p.groups_trainable, step_s: p.step_s ?? Number.NaN, metrics, top_replies: top });
            if (!quiet) {
              console.log(
                `step ${String(p.step).padStart(2)}  reward ${fmt(p.reward_mean)} ± ${fmt(p.reward_std_within_group)}  ` +
                  `trainable ${p.groups_trainable}  loss ${fmt(tr?.loss)}  kl ${fmt(tr?.kl)}  probs_corr ${fmt(tr?.probs_corr)}  ` +
                  `rollout ${p.rollout_s?.toFixed(1) ?? "-"}s  train ${p.train_s?.toFixed(1) ?? "-"}s  step ${p.step_s?.toFixed(1) ?? "-"}s`,
              );
              console.log(`         ${top}`);
              if (Object.keys(metrics).length) console.log(`         metrics: ${showMetrics(metrics)}`);
            }
          } else if (ev.type === "eval.finished") {
            const valRollouts = (evalRollouts.get(ev.payload.step) ?? []).sort((a, b) => a.task_index - b.task_index);
            const replies = valRollouts.map(replyOf);
            const metrics = meanMetrics(valRollouts);
            evals.push({ step: ev.payload.step, reward: ev.payload.reward_mean, metrics, replies });
            console.log(`eval @ step ${ev.payload.step}: validation reward ${fmt(ev.payload.reward_mean)} (${ev.payload.model})`);
            if (Object.keys(metrics).length) console.log(`         metrics: ${showMetrics(metrics)}`);
            console.log(`         ${replies.map((r) => JSON.stringify(r)).join(" ")}`);
          } else if (ev.type === "run.finished") {
            finished = ev;
            runner?.off("exit", onExit);
            sub.unsubscribe();
            resolve();
          }
        },
        onError: reject,
      },
    );
  });

  const done = finished as Extract<RunEvent, { type: "run.finished" }> | null;
  const base = evals[0]?.reward ?? null;
  const final = evals.length > 1 ? (evals[evals.length - 1]?.reward ?? null) : null;
  const rise = base !== null && final !== null ? final - base : null;
  const status = done?.payload.status ?? "unknown";
  const result: SeedResult = {
    seed,
    run_id: runId,
    status,
    error: done?.payload.error ?? null,
    evals,
    steps,
    base,
    final,
    rise,
    learned: status === "completed" && rise !== null && rise >= MARGIN - 1e-9,
    total_s: Math.round((Date.now() - t0) / 100) / 10,
    loadavg_start: loadavgStart,
    loadavg_end: loadavg().map((x) => Number(x.toFixed(2))),
  };
  console.log(
    `seed ${seed}: ${status}, validation ${evals.map((e) => `${e.step}: ${fmt(e.reward)}`).join("  ")}` +
      `  rise ${rise === null ? "-" : signed(rise)}  ${result.total_s.toFixed(0)} s`,
  );
  if (done?.payload.error) console.error(`seed ${seed}: ${done.payload.error}`);
  return result;
}

function fmt(x: number | null | undefined): string {
  return x === null || x === undefined ? "  -  " : x.toFixed(3);
}
function signed(x: number): string {
  return `${x >= 0 ? "+" : ""}${x.toFixed(3)}`;
}

// ---------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  console.log(`template: ${path.relative(root, templateDir)}  seeds: ${seeds.join(",")}  runs: ${runsDir}`);
  console.log(`config: ${JSON.stringify(baseConfig)}`);
  const t0 = Date.now();
  const port = await startRunner();
  const client = createRunnerClient(`http://127.0.0.1:${port}`, token);
  const results: SeedResult[] = [];
  const summarize = (partial: boolean) => ({
    template: path.relative(root, templateDir),
    config: baseConfig,
    margin: MARGIN,
    seeds,
    tag: tag ?? null,
    learned: results.filter((r) => r.learned).length,
    total_s: Math.round((Date.now() - t0) / 1000),
    date: new Date().toISOString(),
    ...(partial ? { partial: `${results.length} of ${seeds.length} seeds so far` } : {}),
    results,
  });
  for (const seed of seeds) {
    results.push(await runSeed(client, seed));
    // Written after every seed, so a bench cut short keeps the seeds it finished.
    if (jsonOut && results.length < seeds.length) writeFileSync(path.resolve(jsonOut), JSON.stringify(summarize(true), null, 2) + "\n");
  }
  const totalS = Math.round((Date.now() - t0) / 1000);

  // Final table: one row per seed, one column per eval step.
  const evalSteps = [...new Set(results.flatMap((r) => r.evals.map((e) => e.step)))].sort((a, b) => a - b);
  console.log(`\n${templateName}: greedy validation reward by step (learned = final − step 0 ≥ ${MARGIN})`);
  console.log(["seed", ...evalSteps.map(String), "rise", "learned", "time", "load avg (1 min, start→end)"].join("\t"));
  for (const r of results) {
    const byStep = new Map(r.evals.map((e) => [e.step, e.reward]));
    console.log(
      [
        String(r.seed),
        ...evalSteps.map((s) => fmt(byStep.get(s))),
        r.rise === null ? "-" : signed(r.rise),
        r.learned ? "yes" : `NO (${r.status})`,
        `${r.total_s.toFixed(0)} s`,
        `${r.loadavg_start[0]}→${r.loadavg_end[0]}`,
      ].join("\t"),
    );
  }
  // The same table for each metric the reward function reports (e.g. the calculator's well_formed_call rate).
  const metricNames = [...new Set(results.flatMap((r) => r.evals.flatMap((e) => Object.keys(e.metrics))))].sort();
  for (const name of metricNames) {
    console.log(`\n${templateName}: validation ${name} (mean over validation rollouts) by step`);
    console.log(["seed", ...evalSteps.map(String), "change"].join("\t"));
    for (const r of results) {
      const byStep = new Map(r.evals.map((e) => [e.step, e.metrics[name]]));
      const first = r.evals[0]?.metrics[name];
      const last = r.evals.length > 1 ? r.evals[r.evals.length - 1]?.metrics[name] : undefined;
      const change = first !== undefined && last !== undefined ? signed(last - first) : "-";
      console.log([String(r.seed), ...evalSteps.map((s) => fmt(byStep.get(s))), change].join("\t"));
    }
  }
  const learned = results.filter((r) => r.learned).length;
  console.log(`learned on ${learned} of ${results.length} seeds; total ${totalS} s including engine start-up`);

  const summary = summarize(false);
  console.log(`LEARNING_JSON ${JSON.stringify(summary)}`);
  if (jsonOut) writeFileSync(path.resolve(jsonOut), JSON.stringify(summary, null, 2) + "\n");
  if (ci && learned < results.length) {
    const failed = results.filter((r) => !r.learned).map((r) => r.seed);
    console.error(`learning check failed: the validation reward rose by less than ${MARGIN} on seed(s) ${failed.join(", ")}`);
    return 1;
  }
  return 0;
}

// Ctrl-C or a CI timeout: stop the runner (which stops its engine) instead of leaving it running.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`bench: ${signal}, stopping the runner`);
    runner?.kill("SIGTERM");
    process.exit(130);
  });
}

main()
  .then((code) => (process.exitCode = code))
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => {
    runner?.kill("SIGTERM");
    if (!keepRuns) setTimeout(() => rmSync(runsDir, { recursive: true, force: true }), 2000).unref();
  });
