/**
 * What an fdatasync costs the runner's event log: why only run boundaries are synced (gpu-runner/src/events/
 * event-log.ts). Appends `--rollouts` rollout.finished events of a real rollout's size through the real
 * EventLog (as shipped: step.finished + checkpoint.saved, both synced, every `--per-step` rollouts), then
 * the same lines with plain appendFile-style writes, with and without an fdatasync after each line.
 *
 *   node --no-node-snapshot --import tsx bench/event-log-fsync.ts   # --dir /path/on/the/runs/disk --rollouts 2000 --per-step 16 --reps 3
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { RunConfig } from "../contracts";
import { EventLog } from "../gpu-runner/src/events/event-log";
import { syntheticTrajectory } from "../server/test/synthetic-events";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
};
const rollouts = Number(flag("--rollouts", "2000"));
const perStep = Number(flag("--per-step", "16"));
const reps = Number(flag("--reps", "3"));
const base = path.resolve(flag("--dir", os.tmpdir()));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function shipped(dir: string): number {
  const log = new EventLog(dir);
  const t0 = performance.now();
  log.append("r", { type: "run.started", payload: { kind: "train", config: RunConfig.parse({}), model: "SmolLM2-135M-Instruct", resumed_from_step: 0 } });
  for (let i = 0; i < rollouts; i++) {
    log.append("r", { type: "rollout.finished", payload: syntheticTrajectory(i, 0) });
    if ((i + 1) % perStep === 0) {
      const step = (i + 1) / perStep;
      log.append("r", { type: "checkpoint.saved", payload: { step, path: `/ckpt/${step}`, size_bytes: 1 } });
      log.append("r", {
        type: "step.finished",
        payload: { step, reward_mean: 0.5, reward_std_within_group: 0.1, exception_rate: 0, groups_trainable: 1, rollouts: perStep, rollout_s: 1, train_s: 1, step_s: 2, tokens_per_s: 1, judge_tokens: 0, judge_cost_usd: 0, trainer: null },
      });
    }
  }
  log.append("r", { type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } });
  const ms = performance.now() - t0;
  log.close();
  return ms;
}

function raw(dir: string, sync: boolean, lines: Buffer[]): number {
  const fd = fs.openSync(path.join(dir, "raw.jsonl"), "a");
  const t0 = performance.now();
  for (const line of lines) {
    fs.writeSync(fd, line);
    if (sync) fs.fdatasyncSync(fd);
  }
  const ms = performance.now() - t0;
  fs.closeSync(fd);
  return ms;
}

const lines = Array.from({ length: rollouts }, (_, i) => Buffer.from(JSON.stringify({ run_id: "r", seq: i + 1, ts: Date.now(), type: "rollout.finished", payload: syntheticTrajectory(i, 0) }) + "\n"));
const bytes = lines.reduce((n, l) => n + l.length, 0);
const fresh = () => fs.mkdtempSync(path.join(base, "rollbook-fsync-bench-"));
const results: Record<string, number[]> = { shipped: [], "write only": [], "write + fdatasync each": [] };
for (let r = 0; r < reps; r++) {
  for (const [name, run] of [
    ["shipped", (d: string) => shipped(d)],
    ["write only", (d: string) => raw(d, false, lines)],
    ["write + fdatasync each", (d: string) => raw(d, true, lines)],
  ] as const) {
    const dir = fresh();
    try {
      results[name]!.push(run(dir));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
}
console.log(`${rollouts} rollout.finished lines (${(bytes / rollouts / 1024).toFixed(1)} KiB each) on ${base}; a step boundary every ${perStep}; median of ${reps}; load ${os.loadavg()[0]!.toFixed(1)}`);
for (const [name, ms] of Object.entries(results)) {
  const m = median(ms);
  console.log(`${name.padEnd(24)} ${m.toFixed(0).padStart(6)} ms  ${((m * 1000) / rollouts).toFixed(0).padStart(5)} µs/rollout  (reps: ${ms.map((x) => x.toFixed(0)).join(", ")})`);
}
