/**
 * The cross-workspace case of the fairness bench (bench/fairness.ts --case workspaces; issue 29, item 4):
 * workspace A's CPU-bound rollouts (`for (;;) await null`, as many as --spinners, 60 s limit, 5 s CPU,
 * concurrency 32) beside workspace B's normal ones (one ctx.chat of --tokens tokens each, --b-limit-ms), on
 * the bench's real runner and engine. Per repetition: B alone, then B started 1.5 s after A's rollouts are
 * all computing (as the finding was met), A stopped after B is done. Before each B run the pool's idle
 * processes are dropped, so B starts its own processes in both conditions (beside, A would have taken the
 * warm ones). B's time is its run's makespan (its slowest rollout's duration); medians over repetitions;
 * target: beside ≤ 1.5× alone. Load average before each B run, the engine's share of runnable time spent
 * waiting for a CPU during it, and how A's rollouts ended are printed and written to
 * bench/results/fairness-workspaces.json.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Trajectory } from "../contracts";
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
  errors: string[];
  load: number;
  engineWaitShare: number | null;
}

/** One run of B's normal rollouts, with the engine's wait share over it. */
async function runB(r: TestRunner, id: string, o: WorkspacesOptions): Promise<BRun> {
  sandboxPool.dropIdle();
  const load = load1();
  const enginePid = r.server.supervisor.status().pid;
  const before = enginePid ? schedUse(enginePid) : null;
  const ts = trajectories(await dryRun(r.client, id, fairnessFiles({ words: WORDS, rolloutTimeoutMs: o.bLimitMs, maxTokens: o.tokens }), 600_000, "ws-b"));
  const after = enginePid ? schedUse(enginePid) : null;
  const wait = before && after ? after.waitNs - before.waitNs : 0;
  const cpu = before && after ? after.cpuNs - before.cpuNs : 0;
  const durations = ts.map((t) => t.timings.duration_ms);
  return {
    makespanMs: Math.max(...durations),
    durations,
    cpuWaitMs: ts.map((t) => t.timings.cpu_wait_ms ?? Number.NaN),
    errors: ts.filter((t) => t.error).map((t) => `${id}: ${t.error!.kind}: ${t.error!.message}`),
    load,
    engineWaitShare: before && after && wait + cpu > 0 ? wait / (wait + cpu) : null,
  };
}

const kinds = (ts: readonly Trajectory[]) => {
  const out: Record<string, number> = {};
  for (const t of ts) {
    const k = t.error?.kind ?? "ok";
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
};

export async function benchWorkspaces(r: TestRunner, o: WorkspacesOptions): Promise<boolean> {
  const mode = cpuShare().mode;
  console.log(`\nworkspaces: A ${o.spinners} CPU-bound rollouts beside B ${WORDS.length} normal ones (${o.tokens} tokens, limit ${o.bLimitMs} ms); CPU share: ${mode}; load ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const alone: BRun[] = [];
  const beside: BRun[] = [];
  const aEnds: Record<string, number>[] = [];
  const busy = () => sandboxPool.size.live - sandboxPool.size.idle;
  await runB(r, "ws-warm", o); // uncounted: compiles the experiment, warms the engine
  for (let rep = 1; rep <= o.reps; rep++) {
    alone.push(await runB(r, `ws-alone-${rep}`, o));
    const aId = `ws-spinners-${rep}`;
    const aFiles = fairnessFiles({ words: [], spinners: o.spinners, rolloutTimeoutMs: 60_000, cpuTimeoutMs: 5_000, concurrency: 32, maxTokens: o.tokens });
    const aRun = dryRun(r.client, aId, aFiles, 600_000, "ws-a");
    try {
      await until(`A's ${o.spinners} rollouts computing`, () => busy() >= o.spinners, 120_000);
      await sleep(1_500);
      beside.push(await runB(r, `ws-beside-${rep}`, o));
    } finally {
      await r.client.stop.mutate({ run_id: aId });
    }
    aEnds.push(kinds(trajectories(await aRun)));
    const a = alone.at(-1)!;
    const b = beside.at(-1)!;
    console.log(
      `rep ${rep}: B alone ${a.makespanMs} ms (load ${a.load.toFixed(2)}, engine waited ${share(a.engineWaitShare)}), ` +
        `beside ${b.makespanMs} ms (load ${b.load.toFixed(2)}, engine waited ${share(b.engineWaitShare)}); A's rollouts: ${JSON.stringify(aEnds.at(-1))}`,
    );
  }
  const aloneMs = median(alone.map((x) => x.makespanMs));
  const besideMs = median(beside.map((x) => x.makespanMs));
  const ratio = besideMs / aloneMs;
  const failures = [...alone, ...beside].flatMap((x) => x.errors);
  const met = ratio <= 1.5 && failures.length === 0;
  console.log(`\nB's run (slowest rollout), medians of ${o.reps}: alone ${Math.round(aloneMs)} ms, beside A ${Math.round(besideMs)} ms: ${ratio.toFixed(2)}× (target ≤ 1.50): ${met ? "met" : "NOT met"}; failures ${failures.length}`);
  console.log(`B's rollouts, median duration: alone ${median(alone.flatMap((x) => x.durations))} ms, beside ${median(beside.flatMap((x) => x.durations))} ms; median CPU wait: alone ${median(alone.flatMap((x) => x.cpuWaitMs))} ms, beside ${median(beside.flatMap((x) => x.cpuWaitMs))} ms`);
  for (const f of failures) console.log(`  ${f}`);
  const out = {
    date: new Date().toISOString(),
    cpus: os.cpus().length,
    cpu_share: mode,
    options: o,
    alone: alone.map(({ errors: _e, ...x }) => x),
    beside: beside.map(({ errors: _e, ...x }) => x),
    a_rollout_ends: aEnds,
    alone_makespan_median_ms: aloneMs,
    beside_makespan_median_ms: besideMs,
    ratio: Number(ratio.toFixed(2)),
    target_met: met,
    failures,
  };
  const file = path.join(REPO_ROOT, "bench/results", mode === "off" ? "fairness-workspaces-off.json" : "fairness-workspaces.json");
  fs.writeFileSync(file, JSON.stringify(out, null, 2) + "\n");
  console.log(`written ${path.relative(REPO_ROOT, file)}`);
  return met;
}

const share = (x: number | null) => (x === null ? "(not measured)" : `${Math.round(100 * x)}%`);
