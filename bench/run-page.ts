/**
 * The run page with 10,000 (or 100,000) rollouts: time from navigation to interactive in Chromium. Creates a fresh
 * Postgres database, starts the production web server on it (needs `NODE_ENV=production npx next build`
 * first; no runner: the run is finished and the page only reads its stored log), signs up in the browser,
 * seeds a finished train run of N rollouts into that user's workspace (server/test/seed-run.ts), then R times:
 * a fresh page navigates to the run, waits until the rollout list says it holds all N rollouts and shows a
 * row, clicks the row and waits for its transcript. Reports each run and the medians, with the load average.
 *
 *   node --no-node-snapshot --import tsx bench/run-page.ts [--rollouts 10000|100000] [--reps 5] [--port N] [--verbose]
 *
 * The web server's port: --port, else BENCH_WEB_PORT, else a free one (bench/ports.ts); the database is a
 * fresh one with a unique name on TEST_DATABASE_URL's server. So two of these can run side by side.
 *
 * Targets (issues 8, 21): ≤ 1.5 s navigation → interactive with 10,000 rollouts, ≤ 3 s with 100,000.
 * The clock includes reading the clicked rollout's transcript (the first load ships summaries only).
 */
import os from "node:os";
import fs from "node:fs";
import path from "node:path";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { chromium } from "playwright-core";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { seedRun } from "../server/test/seed-run";
import { benchPorts, portUsage, type PortSpec } from "./ports";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
// The runner port is never listened on (no runner is started): a free one, so the server's calls fail fast.
const PORT_SPECS: PortSpec[] = [{ flag: "port", env: "BENCH_WEB_PORT" }, { flag: "runner-port", env: "BENCH_RUNNER_PORT" }];
if (process.argv.includes("--help")) {
  console.log(`usage: node --no-node-snapshot --import tsx bench/run-page.ts [--rollouts 10000|100000] [--reps 5] [--verbose]\n${portUsage(PORT_SPECS)}`);
  console.log(`ports now: web, runner = ${(await benchPorts(PORT_SPECS)).join(", ")}`);
  process.exit(0);
}
const ROLLOUTS = arg("rollouts", 10_000);
const REPS = arg("reps", 5);
const [PORT, RUNNER_PORT] = await benchPorts(PORT_SPECS);
const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";
const base = `http://127.0.0.1:${PORT}`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(" ");

async function waitForHealth(deadline: number) {
  for (;;) {
    try {
      if ((await fetch(`${base}/api/health`)).ok) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error("web server did not become healthy");
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function main() {
  if (!fs.existsSync(path.resolve(import.meta.dirname, "../.next/BUILD_ID"))) throw new Error("no production build: run NODE_ENV=production npx next build first");
  const name = `rollbook_bench_page_${process.pid}_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-bench-"));
  const server = spawn("node", ["--no-node-snapshot", "--import", "tsx", "server/index.ts"], {
    cwd: path.resolve(import.meta.dirname, ".."),
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(PORT),
      DATABASE_URL: url,
      // No runner is started: the run is finished and read from the database.
      RUNNER_URL: `http://127.0.0.1:${RUNNER_PORT}`,
      RUNNER_TOKEN: randomUUID().replace(/-/g, "").repeat(2),
      DATA_DIR: dataDir,
      ROLLBOOK_RUNS_DIR: path.join(dataDir, "runs"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let serverLog = "";
  server.stdout.on("data", (d: Buffer) => (serverLog += d.toString()));
  server.stderr.on("data", (d: Buffer) => (serverLog += d.toString()));
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
  try {
    await waitForHealth(Date.now() + 120_000);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    const email = `bench-${Date.now()}@bench.local`;
    await page.goto(`${base}/sign-in?mode=sign-up&next=%2F`);
    const form = page.locator("form[aria-label='Create account']");
    await form.locator("input[name=name]").fill("Bench");
    await form.locator("input[name=email]").fill(email);
    await form.locator("input[name=password]").fill("bench-password-long");
    await form.locator("button[type=submit]").click();
    await page.waitForURL((u) => !u.pathname.startsWith("/sign-in"), { timeout: 60_000 });

    const t0 = performance.now();
    const groupsPerStep = 50;
    const rolloutsPerGroup = 8;
    const steps = Math.ceil(ROLLOUTS / (groupsPerStep * rolloutsPerGroup));
    const seeded = await seedRun(url, { email, steps, groupsPerStep, rolloutsPerGroup, tasks: 200 });
    console.log(`seeded a run of ${seeded.rollouts} rollouts (${steps} steps × ${groupsPerStep} groups × ${rolloutsPerGroup}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const pgc = new pg.Client({ connectionString: url });
    await pgc.connect();
    const eventBytes = Number((await pgc.query<{ b: string }>(`SELECT sum(pg_column_size("payload")) AS b FROM "RunEvent"`)).rows[0]!.b);
    await pgc.end();
    console.log(`stored event payloads: ${(eventBytes / 1e6).toFixed(1)} MB (jsonb)`);

    const runUrl = `${base}/runs/${seeded.runId}`;
    // One warm-up (first compile of server routes, Postgres cache), not counted.
    const results: { list: number; interactive: number }[] = [];
    console.log(`load average before: ${load()}  (${os.cpus().length} CPUs)`);
    for (let i = 0; i < REPS + 1; i++) {
      const p = await context.newPage();
      const start = Date.now();
      if (process.argv.includes("--verbose")) {
        // Where the time goes: each tRPC request's start and end, relative to navigation.
        p.on("requestfinished", (req) => {
          if (!req.url().includes("/api/trpc/") && !req.url().includes("/api/runs/")) return;
          const t = req.timing();
          const at = t.startTime - start;
          const u = new URL(req.url());
          // tRPC batches name their procedures in the path; their inputs are long and say little here.
          const what = u.pathname.startsWith("/api/trpc/") ? u.pathname.replace("/api/trpc/", "") : `${u.pathname}${u.search}`;
          const line = `  ${what} sent +${at.toFixed(0)} ms, response ${t.responseStart.toFixed(0)} ms, done ${t.responseEnd.toFixed(0)} ms`;
          // The body's size as sent (compressed when the server compressed it); unknown once the tab closed.
          req.sizes().then(
            (sz) => console.log(`${line}, ${(sz.responseBodySize / 1e6).toFixed(2)} MB sent`),
            () => console.log(line),
          );
        });
      }
      await p.goto(runUrl, { waitUntil: "commit" });
      const list = p.getByTestId("rollout-list");
      await list.and(p.locator(`[data-count="${seeded.rollouts}"]`)).waitFor({ timeout: Math.max(120_000, seeded.rollouts * 5) });
      const row = p.getByTestId("rollout").first();
      await row.waitFor();
      const listAt = Date.now() - start;
      await row.click();
      await p.getByTestId("rollout-detail").waitFor();
      const interactive = Date.now() - start;
      if (i > 0) results.push({ list: listAt, interactive });
      console.log(`${i === 0 ? "warm-up" : `run ${i}`}: list of ${seeded.rollouts} rendered ${listAt} ms, transcript open ${interactive} ms  (load ${load()})`);
      await p.close();
    }
    console.log(`\nmedian of ${REPS}: list rendered ${median(results.map((r) => r.list))} ms, interactive (row clicked → transcript) ${median(results.map((r) => r.interactive))} ms`);
    console.log(`load average after: ${load()}`);
    const shots = process.argv.indexOf("--screenshots");
    if (shots >= 0) {
      // For looking at the page: the list with a transcript open, then the group view of one task.
      const dir = process.argv[shots + 1]!;
      fs.mkdirSync(dir, { recursive: true });
      const p = await context.newPage();
      await p.goto(`${runUrl}?tab=rollouts`);
      await p.getByTestId("rollout").first().waitFor();
      await p.getByTestId("rollout").nth(2).click();
      await p.getByTestId("rollout-detail").waitFor();
      await p.screenshot({ path: path.join(dir, "run-page-rollouts.png") });
      await p.getByRole("tab", { name: /Groups/ }).click();
      await p.getByTestId("group-task").selectOption({ index: 1 });
      await p.getByTestId("group-diff").first().waitFor();
      await p.screenshot({ path: path.join(dir, "run-page-groups.png") });
      await p.close();
    }
  } catch (e) {
    console.error(serverLog.slice(-4000));
    throw e;
  } finally {
    await browser.close();
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
    await dropPgDatabase(adminUrl, name);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
