/**
 * Fair share on a shared runner (issue 16, finding 7): does a rollout that calls ctx.chat in tight loops
 * slow its sibling rollouts down? A REAL runner (gpu-runner/src/server.ts, in this process) with its REAL
 * engine (CPU, SmolLM2-135M), real sandboxes.
 *
 *   node --no-node-snapshot --import tsx bench/fairness.ts [--reps 3] [--limit-ms 20000] [--batch N] [--loop-tokens 64] [--loops 4]
 *
 * `--tokens` (default 8): max_tokens of a normal rollout's one call.
 * Per repetition, one after the other: "alone", a dry run of the normal rollouts (each asks the model once,
 * greedy, so it samples the same tokens every time); "beside", the same rollouts in a run with a looping
 * sibling (`loops` concurrent ctx.chat loops of `loop-tokens` tokens each, until limits.rollout_timeout_ms
 * stops it). Each normal rollout's duration (trajectory timings.duration_ms, sandbox start included) is
 * compared with its own time alone; medians over repetitions; the target is every normal rollout within 2×
 * its time alone. `--batch` sets the engine's ROLLBOOK_MAX_BATCH (its batch capacity, which the runner's fair
 * queue keeps on it); default: the engine's own (32). Load average printed before and after; results also
 * written to bench/results/fairness.json.
 *
 * `--case workspaces` (or `all`, the default: both) runs the cross-workspace case instead or as well
 * (bench/fairness-workspaces.ts): workspace A's `--spinners` (12) CPU-bound rollouts beside workspace B's
 * normal ones (`--b-limit-ms` 20000, `--b-tokens` 6), B alone vs beside, medians of `--reps`. With
 * RUNNER_CPU_SHARE=off in the environment it measures the runner without CPU sharing.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { REPO_ROOT } from "../gpu-runner/src/env";
import { startTestRunner, type TestRunner } from "../gpu-runner/src/test-support/test-runner";
import { WORDS, dryRun, fairnessFiles, trajectories, wordOf } from "./fairness-experiment";
import { benchWorkspaces } from "./fairness-workspaces";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const REPS = arg("reps", 3);
const LIMIT_MS = arg("limit-ms", 20_000);
const BATCH = arg("batch", 0);
const LOOP_TOKENS = arg("loop-tokens", 64);
const LOOPS = arg("loops", 4);
const NORMAL_TOKENS = arg("tokens", 8);
const CASE = process.argv.includes("--case") ? String(process.argv[process.argv.indexOf("--case") + 1]) : "all";
if (!["all", "looper", "workspaces"].includes(CASE)) throw new Error(`--case is all, looper or workspaces (got ${CASE})`);
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(" ");
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

async function main(): Promise<void> {
  if (BATCH > 0) process.env.ROLLBOOK_MAX_BATCH = String(BATCH); // the engine child inherits it
  const loadBefore = load();
  console.log(`fairness bench: ${REPS} repetitions, ${WORDS.length} normal rollouts, looper ${LOOPS}×${LOOP_TOKENS} tokens, limit ${LIMIT_MS} ms; ${os.cpus().length} CPUs; load ${loadBefore}`);
  const runner = await startTestRunner({ name: "fairness-bench", token: randomBytes(24).toString("hex") });
  let met = true;
  try {
    if (CASE !== "workspaces") met = (await benchLooper(runner, loadBefore)) && met;
    if (CASE !== "looper") met = (await benchWorkspaces(runner, { reps: REPS, spinners: arg("spinners", 12), bLimitMs: arg("b-limit-ms", 20_000), tokens: arg("b-tokens", 6) })) && met;
    console.log(`\nall targets: ${met ? "met" : "NOT met"}`);
  } finally {
    await runner.close();
  }
}

/** The looping-rollout case (issue 16, finding 7): the rollouts of one run beside a ctx.chat looper. */
async function benchLooper(runner: TestRunner, loadBefore: string): Promise<boolean> {
  const alone: Record<string, number[]> = {};
  const beside: Record<string, number[]> = {};
  const queued: Record<string, number[]> = {};
  const looperTurns: number[] = [];
  const failures: string[] = [];
  const capacity = runner.server.supervisor.status().health?.batch_capacity ?? null;
  console.log(`engine batch capacity ${capacity ?? "(not reported)"}`);
  const normal = { words: WORDS, rolloutTimeoutMs: LIMIT_MS, maxTokens: NORMAL_TOKENS };
  // Warm-up, uncounted: the first run compiles the experiment and warms the engine.
  await dryRun(runner.client, "warm", fairnessFiles(normal));
  for (let rep = 1; rep <= REPS; rep++) {
    const a = trajectories(await dryRun(runner.client, `alone-${rep}`, fairnessFiles(normal)));
    const b = trajectories(await dryRun(runner.client, `beside-${rep}`, fairnessFiles({ ...normal, looper: { tokens: LOOP_TOKENS, loops: LOOPS } })));
    for (const t of a) (alone[wordOf(t)] ??= []).push(t.timings.duration_ms ?? Number.NaN);
    for (const t of b) {
      const word = wordOf(t);
      if (word === "loop") {
        looperTurns.push(t.metrics.turns ?? 0);
        continue;
      }
      (beside[word] ??= []).push(t.timings.duration_ms ?? Number.NaN);
      (queued[word] ??= []).push(t.timings.queued_ms ?? 0);
      if (t.error) failures.push(`beside-${rep} ${word}: ${t.error.kind}: ${t.error.message}`);
    }
    for (const t of a) if (t.error) failures.push(`alone-${rep} ${wordOf(t)}: ${t.error.kind}: ${t.error.message}`);
    console.log(`rep ${rep}: looper answered ${looperTurns.at(-1)} calls; load ${load()}`);
  }
  const rows = WORDS.map((word) => {
    const al = median(alone[word] ?? [Number.NaN]);
    const be = median(beside[word] ?? [Number.NaN]);
    return { word, alone_ms: Math.round(al), beside_ms: Math.round(be), ratio: Number((be / al).toFixed(2)), queued_ms: Math.round(median(queued[word] ?? [0])) };
  });
  console.log("\nrollout   alone ms  beside ms  ratio  queued ms (medians)");
  for (const r of rows) console.log(`${r.word.padEnd(9)} ${String(r.alone_ms).padStart(8)} ${String(r.beside_ms).padStart(10)} ${r.ratio.toFixed(2).padStart(6)} ${String(r.queued_ms).padStart(10)}`);
  const worst = Math.max(...rows.map((r) => r.ratio));
  const met = worst <= 2 && failures.length === 0;
  console.log(`\nworst ratio ${worst.toFixed(2)} (target ≤ 2.00): ${met ? "met" : "NOT met"}; looper answers per run (median) ${median(looperTurns)}; failures ${failures.length}`);
  for (const f of failures) console.log(`  ${f}`);
  const loadAfter = load();
  console.log(`load ${loadAfter}`);
  const out = {
    date: new Date().toISOString(),
    cpus: os.cpus().length,
    load_before: loadBefore,
    load_after: loadAfter,
    batch_capacity: capacity,
    reps: REPS,
    limit_ms: LIMIT_MS,
    looper: { loops: LOOPS, tokens: LOOP_TOKENS, answers_median: median(looperTurns) },
    rows,
    worst_ratio: worst,
    target_met: met,
    failures,
  };
  const file = path.join(REPO_ROOT, "bench/results", BATCH > 0 ? `fairness-batch${BATCH}.json` : "fairness.json");
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  console.log(`written ${path.relative(REPO_ROOT, file)}`);
  return met;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
