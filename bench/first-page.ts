/**
 * `npm start` → "ready" → the first page in a browser. Starts the app the way the quickstart does
 * (`bash scripts/start.sh`: the production build, the runner, the engine with the real model) on ports of
 * its own with a fresh embedded database and a browser already open, waits for the "Rollbook ready" line, then opens Chromium at once
 * and times the first visit: navigation until the sign-in form (what a first visitor sees) is visible.
 * Each repetition is a fresh stack; the median of R is reported with the load average.
 *
 *   node --import tsx bench/first-page.ts [--reps 3] [--port N] [--runner-port N] [--engine-port N]
 *
 * Ports: the flags, else BENCH_WEB_PORT / BENCH_RUNNER_PORT / BENCH_ENGINE_PORT, else free ones (bench/ports.ts),
 * so two of these can run side by side. The database is PGlite in the repetition's own DATA_DIR (no port).
 * The web build must exist or is made by the first start (not timed: only ready → page is).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { benchPorts, portUsage, type PortSpec } from "./ports";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const PORT_SPECS: PortSpec[] = [
  { flag: "port", env: "BENCH_WEB_PORT" },
  { flag: "runner-port", env: "BENCH_RUNNER_PORT" },
  { flag: "engine-port", env: "BENCH_ENGINE_PORT" },
];
if (process.argv.includes("--help")) {
  console.log(`usage: node --import tsx bench/first-page.ts [--reps 3]\n${portUsage(PORT_SPECS)}`);
  console.log(`ports now: web, runner, engine = ${(await benchPorts(PORT_SPECS)).join(", ")}`);
  process.exit(0);
}
const REPS = arg("reps", 3);
const [PORT, RUNNER_PORT, ENGINE_PORT] = await benchPorts(PORT_SPECS);
const ROOT = path.resolve(import.meta.dirname, "..");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function once(rep: number): Promise<{ startToReadyS: number; firstPageMs: number }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-first-page-"));
  const env = {
    ...process.env,
    PORT: String(PORT),
    RUNNER_PORT: String(RUNNER_PORT),
    ENGINE_PORT: String(ENGINE_PORT),
    DATA_DIR: dataDir,
    ROLLBOOK_RUNS_DIR: path.join(dataDir, "runs"),
    DATABASE_URL: "",
    RUNNER_TOKEN: "",
    ENGINE_TOKEN: "",
  };
  // The visitor's browser is already open (its start-up is not the app's): launched before the app is.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  const page = await browser.newPage();
  const started = performance.now();
  const child = spawn("bash", ["scripts/start.sh"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  try {
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Rollbook ready on")) resolve();
      };
      child.stdout.on("data", onData);
      child.stderr.on("data", onData);
      child.once("exit", (code) => reject(new Error(`start.sh exited (${code}) before ready:\n${output.slice(-2000)}`)));
    });
    const readyAt = performance.now();
    {
      await page.goto(`http://127.0.0.1:${PORT}/`);
      // A fresh install: the first visitor is sent to sign-in (create the owner account).
      await page.getByRole("button", { name: /create|sign/i }).first().waitFor({ state: "visible", timeout: 60_000 });
      const firstPageMs = performance.now() - readyAt;
      console.log(`rep ${rep}: start → ready ${((readyAt - started) / 1000).toFixed(1)} s, ready → sign-in form visible ${firstPageMs.toFixed(0)} ms`);
      return { startToReadyS: (readyAt - started) / 1000, firstPageMs };
    }
  } finally {
    await browser.close();
    // The whole process group: start.sh, the runner, the engine and the web server.
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {
      /* already gone */
    }
    await new Promise((r) => setTimeout(r, 3000));
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      /* already gone */
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const results = [];
for (let rep = 1; rep <= REPS; rep++) results.push(await once(rep));
const load = os.loadavg().map((l) => l.toFixed(2)).join(", ");
console.log(
  `median of ${REPS}: start → ready ${median(results.map((r) => r.startToReadyS)).toFixed(1)} s, ` +
    `ready → first page ${median(results.map((r) => r.firstPageMs)).toFixed(0)} ms (load average ${load}, ${os.cpus().length} cores)`,
);
