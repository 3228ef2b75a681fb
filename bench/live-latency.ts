/**
 * Live latency: a rollout finished on the runner → visible in an open browser page, at 20 rollouts/s, beside
 * the same page polling the stored events every 0.5 s (as rLLM's UI polls).
 *
 *   node --no-node-snapshot --import tsx bench/live-latency.ts [--rollouts 200] [--rate 20] [--reps 3] [--poll-ms 500]
 *
 * The stack (bench/live-stack.ts) is real processes: runner → web server (ingestion into Postgres, then
 * socket.io) → Chromium (/usr/bin/chromium via playwright-core) on the live page (server/test/live-page.ts:
 * the app's run-live.ts subscription and run-state.ts fold, rollouts rendered as list items). Latency per
 * rollout = when its list item entered the DOM (a MutationObserver's Date.now()) − the event's ts (the
 * runner's Date.now() when it appended it to its log); one machine, one clock. Each repetition is a fresh
 * run, followed (run.started stored) before the rollouts start; p50 and p99 per repetition, the median of
 * the repetitions reported. `uptime` is printed first and last.
 */
import { execSync } from "node:child_process";
import os from "node:os";
import { chromium } from "playwright-core";
import { median, percentile, startLiveStack } from "./live-stack";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROLLOUTS = arg("rollouts", 200);
const RATE = arg("rate", 20);
const REPS = arg("reps", 3);
const POLL_MS = arg("poll-ms", 500);
const uptime = () => execSync("uptime").toString().trim();

async function main(): Promise<void> {
  console.log(`live latency: ${ROLLOUTS} rollouts at ${RATE}/s, ${REPS} repetitions per mode; ${os.cpus().length} CPUs; ${uptime()}`);
  const stack = await startLiveStack();
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
  const summary: Record<string, { p50: number[]; p99: number[]; mean: number[] }> = {};
  try {
    for (const mode of ["socket", "poll"] as const) {
      summary[mode] = { p50: [], p99: [], mean: [] };
      for (let rep = 1; rep <= REPS; rep++) {
        const runId = await stack.newRun();
        await stack.emit(runId, 0, RATE, false); // run.started only
        await stack.stored(runId, 1);
        const page = await browser.newPage();
        const poll = mode === "poll" ? `&poll=${POLL_MS}` : "";
        await page.goto(`${stack.webUrl}/static/live.html?run=${runId}&token=${encodeURIComponent(stack.apiToken)}${poll}`);
        await page.waitForFunction(() => window.__live?.state().contiguousSeq >= 1, undefined, { timeout: 30_000 });
        const last = await stack.emit(runId, ROLLOUTS, RATE);
        await page.waitForFunction((n) => window.__live.state().contiguousSeq >= n, last, { timeout: 60_000 });
        const { shownAt, emittedAt } = await page.evaluate(() => ({ shownAt: window.__live.shownAt, emittedAt: window.__live.emittedAt }));
        const latencies = Object.keys(emittedAt).map((seq) => shownAt[Number(seq)]! - emittedAt[Number(seq)]!);
        if (latencies.length !== ROLLOUTS || latencies.some((l) => !Number.isFinite(l))) throw new Error(`${mode}: ${latencies.length} of ${ROLLOUTS} rollouts timed`);
        const p50 = percentile(latencies, 50);
        const p99 = percentile(latencies, 99);
        const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
        summary[mode].p50.push(p50);
        summary[mode].p99.push(p99);
        summary[mode].mean.push(mean);
        console.log(`${mode} rep ${rep}: p50 ${p50} ms, p99 ${p99} ms, mean ${mean.toFixed(0)} ms, max ${Math.max(...latencies)} ms (${latencies.length} rollouts)`);
        await page.close();
      }
    }
    for (const [mode, s] of Object.entries(summary)) {
      console.log(`${mode}: median of ${REPS} — p50 ${median(s.p50)} ms, p99 ${median(s.p99)} ms, mean ${median(s.mean).toFixed(0)} ms`);
    }
    console.log(uptime());
  } finally {
    await browser.close();
    await stack.close();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
