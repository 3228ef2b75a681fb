/**
 * The cross-workspace case of the fairness bench (bench/fairness.ts --case workspaces; issue 29, item 4):
 * workspace A's CPU-bound rollouts (`for (;;) await null`, as many as --spinners, 60 s limit, 5 s CPU,
 * concurrency 32) beside workspace B's normal ones (one ctx.chat of --tokens tokens each, --b-limit-ms), on
 * the bench's real runner and engine. Per repetition: B alone, then B started 1.5 s after A's rollouts are
 * all computing (as the finding was met), A stopped after B is done; each condition twice — "fresh", the
 * pool's idle processes dropped first, so B starts its own processes (beside, A's rollouts would have
 * taken the idle ones), then "warm", B reusing the processes its fresh run left idle. B's time is its run's
 * makespan (its slowest rollout's duration); medians over repetitions; target: beside ≤ 1.5× alone. Load
 * average before each B run (A's busy rollouts count in it) and the engine's share of runnable time spent
 * waiting for a CPU during it are printed and written to bench/results/fairness-workspaces-<mode>.json
 * (RUNNER_CPU_SHARE=off: the runner without CPU sharing). A's run is stopped once B's are done: its
 * rollouts, aborted, are not recorded.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT } from "../gpu-runner/src/env";
import { cpuShare } from "../gpu-runner/src/sandbox/cpu/open";
import { schedUse } from "../gpu-runner/src/sandbox/cpu/proc";
import { sandboxPool } from "../gpu-runner/src/sandbox/pool";
import type { TestRunner } from "../gpu-runner/src/test-support/test-runner";
import { WORDS, dryRun, fairnessFiles, trajectories } from "./fairness-experiment";

export interface WorkspacesOptions {
  reps: number;
  spinners: number;
  bLimitMs: number;
  tokens: number;
}

const load1 = () => os.loadavg()[0]!;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? Number.NaN : s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

interface BRun {
  makespanMs: number;
  durations: number[];
  cpuWaitMs: number[];
  cpuMs: number[];
  modelMs: number[];
  errors: string[];
  load: number;
  engineWaitShare: number | null;
}

type Start = "fresh" | "warm";

/**
 * One run of B's normal rollouts, with the engine's wait share over it. "fresh": the pool's idle processes
 * are dropped first, so B starts its own; "warm": B takes the processes its previous run left idle.
 */
async function runB(r: TestRunner, id: string, o: WorkspacesOptions, start: Start): Promise<BRun> {
  if (start === "fresh") sandboxPool.dropIdle();
  const load = load1();
  const enginePid = r.server.supervisor.status().pid;
  const before = enginePid ? schedUse(enginePid) : null;
  const ts = trajectories(await dryRun(r.client, id, fairnessFiles({ words: WORDS, rolloutTimeoutMs: o.bLimitMs, maxTokens: o.tokens }), 600_000, "ws-b"));
  const after = enginePid ? schedUse(enginePid) : null;
  const wait = before && after ? after.waitNs - before.waitNs : 0;
  const cpu = before && after ? after.cpuNs - before.cpuNs : 0;
  const durations = ts.map((t) => t.timings.duration_ms ?? Number.NaN);
  return {
    makespanMs: Math.max(...durations),
    durations,
    cpuWaitMs: ts.map((t) => t.timings.cpu_wait_ms ?? Number.NaN),
    cpuMs: ts.map((t) => t.timings.cpu_ms ?? Number.NaN),
    modelMs: ts.map((t) => Math.round(t.timings.model_ms ?? Number.NaN)),
    errors: ts.filter((t) => t.error).map((t) => `${id}: ${t.error!.kind}: ${t.error!.message}`),
    load,
    engineWaitShare: before && after && wait + cpu > 0 ? wait / (wait + cpu) : null,
  };
}

type Runs = Record<`${"alone" | "beside"}-${Start}`, BRun[]>;
const KEYS = ["alone-fresh", "alone-warm", "beside-fresh", "beside-warm"] as const;

export async function benchWorkspaces(r: TestRunner, o: WorkspacesOptions): Promise<boolean> {
  const mode = cpuShare().mode;
  console.log(`\nworkspaces: A ${o.spinners} CPU-bound rollouts beside B ${WORDS.length} normal ones (${o.tokens} tokens, limit ${o.bLimitMs} ms); CPU share: ${mode}; load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const runs: Runs = { "alone-fresh": [], "alone-warm": [], "beside-fresh": [], "beside-warm": [] };
  const busy = () => sandboxPool.size.live - sandboxPool.size.idle;
  await runB(r, "ws-warm", o, "fresh"); // uncounted: compiles the experiment, warms the engine
  for (let rep = 1; rep <= o.reps; rep++) {
    runs["alone-fresh"].push(await runB(r, `ws-alone-fresh-${rep}`, o, "fresh"));
    runs["alone-warm"].push(await runB(r, `ws-alone-warm-${rep}`, o, "warm"));
    const aId = `ws-spinners-${rep}`;
    const aFiles = fairnessFiles({ words: [], spinners: o.spinners, rolloutTimeoutMs: 60_000, cpuTimeoutMs: 5_000, concurrency: 32, maxTokens: o.tokens });
    const aRun = dryRun(r.client, aId, aFiles, 600_000, "ws-a");
    try {
      await until(`A's ${o.spinners} rollouts computing`, () => busy() >= o.spinners, 120_000);
      await sleep(1_500);
      runs["beside-fresh"].push(await runB(r, `ws-beside-fresh-${rep}`, o, "fresh"));
      runs["beside-warm"].push(await runB(r, `ws-beside-warm-${rep}`, o, "warm"));
    } finally {
      await r.client.stop.mutate({ run_id: aId });
    }
    await aRun;
    console.log(
      `rep ${rep}: ` +
        KEYS.map((k) => {
          const x = runs[k].at(-1)!;
          return `${k} ${x.makespanMs} ms (load ${x.load.toFixed(2)}, engine waited ${share(x.engineWaitShare)})`;
        }).join("; "),
    );
  }
  const makespan = (k: (typeof KEYS)[number]) => median(runs[k].map((x) => x.makespanMs));
  const ratios = { fresh: makespan("beside-fresh") / makespan("alone-fresh"), warm: makespan("beside-warm") / makespan("alone-warm") };
  const failures = KEYS.flatMap((k) => runs[k].flatMap((x) => x.errors));
  const met = ratios.fresh <= 1.5 && ratios.warm <= 1.5 && failures.length === 0;
  console.log(`\nB's run (its slowest rollout), medians of ${o.reps} (target: beside ≤ 1.50× alone):`);
  for (const start of ["fresh", "warm"] as const) {
    const a = makespan(`alone-${start}`);
    const b = makespan(`beside-${start}`);
    console.log(`  ${start} processes: alone ${Math.round(a)} ms, beside A ${Math.round(b)} ms: ${ratios[start].toFixed(2)}× ${ratios[start] <= 1.5 ? "met" : "NOT met"}`);
  }
  const med = (k: (typeof KEYS)[number], key: "durations" | "cpuMs" | "cpuWaitMs" | "modelMs") => median(runs[k].flatMap((x) => x[key]));
  console.log(`failures ${failures.length}\nB's rollouts, medians (ms):  duration   model    CPU   CPU wait`);
  for (const k of KEYS) {
    console.log(`  ${k.padEnd(24)} ${String(med(k, "durations")).padStart(9)} ${String(med(k, "modelMs")).padStart(7)} ${String(med(k, "cpuMs")).padStart(6)} ${String(med(k, "cpuWaitMs")).padStart(10)}`);
  }
  for (const f of failures) console.log(`  ${f}`);
  const out = {
    date: new Date().toISOString(),
    cpus: os.cpus().length,
    cpu_share: mode,
    options: o,
    runs: Object.fromEntries(KEYS.map((k) => [k, runs[k].map(({ errors: _e, ...x }) => x)])),
    makespan_median_ms: Object.fromEntries(KEYS.map((k) => [k, makespan(k)])),
    ratio: { fresh: Number(ratios.fresh.toFixed(2)), warm: Number(ratios.warm.toFixed(2)) },
    target_met: met,
    failures,
  };
  const file = path.join(REPO_ROOT, "bench/results", `fairness-workspaces-${mode}.json`);
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  console.log(`written ${path.relative(REPO_ROOT, file)}`);
  return met;
}

const share = (x: number | null) => (x === null ? "(not measured)" : `${Math.round(100 * x)}%`);
