/**
 * Chaos, findings 4 and 5 of issue 17: pages that tell the truth, on real processes and a real browser.
 *
 *   Chromium (server/test/run-page.ts: the run page's header as the app decides it) ── web (delivery-web.ts:
 *   socket.io, ingestion, delivery health) ──proxy── Postgres;  web ── the REAL runner (stand-in engine)
 *
 *   4. A page open while its run is stopped, then resumed through the API (attempt 2), shows running and a
 *      Stop button within seconds (it used to keep the terminal status: runs.get stopped polling and the page
 *      preferred its terminal answer). A run that does not exist says "not found" once, never "queued".
 *   5. The database link cut under a running run: the page says "delayed N s: database unreachable" while its
 *      socket stays connected (the old indicator showed the socket's state: "live"), and "live" once it heals;
 *      the same when the link hangs instead (no error: "database not answering").
 *
 *   npx vitest run --project server server/chaos/pages.servertest.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startRunnerServer, type RunnerServer } from "@/gpu-runner/src/server";
import { authSecret } from "../auth/secret";
import { env } from "../env";
import { registerRunner } from "../runner-client";
import { createApiToken } from "@/features/workspace/server";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { spawnTs, stopChild, type Child } from "../test/child-process";
import { callerFor, closedPort, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "../test/harness";
import { buildRunPage } from "../test/live-page-build";
import { startStandInEngine, type StandInEngine } from "../test/stand-in-engine";
import { startTcpProxy, type TcpProxy } from "../test/tcp-proxy";

const NAME = "chaos-pages";
const TOKEN = "chaos-pages-runner-token-0123456789";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
let engine: StandInEngine;
let runner: RunnerServer;
let web: Child;
let pgProxy: TcpProxy;
let browser: Browser;
let runsDir: string;
let staticDir: string;
let ws: string;
let apiToken: string;
let webPort: number;
/** Every chat waits while this is set: a run holds at its first step, running, for as long as a case needs. */
let hold: { released: Promise<void>; release: () => void } | null = null;

function holdChats(): void {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  hold = { released, release };
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!ok(v)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)}\nweb:\n${web?.lines.slice(-15).join("\n")}`);
    await new Promise((r) => setTimeout(r, 100));
    v = await read();
  }
  return v;
}

beforeAll(async () => {
  tdb = await createTestDb();
  runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-pages-runs-"));
  staticDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-pages-page-"));
  await buildRunPage(staticDir);
  engine = await startStandInEngine({ runsDir, onChat: async () => void (await hold?.released) });
  runner = await startRunnerServer({
    env: loadRunnerEnv({
      RUNNER_PORT: "0",
      RUNNER_TOKEN: TOKEN,
      ENGINE_URL: engine.url,
      ENGINE_TOKEN: "stand-in-engine-token",
      ROLLBOOK_RUNS_DIR: runsDir,
      RUNNER_NAME: NAME,
    } as Partial<NodeJS.ProcessEnv> as NodeJS.ProcessEnv),
    onEngineLog: () => {},
    supervisor: { healthIntervalMs: 500 },
  });
  await runner.supervisor.waitReady(30_000);
  await registerRunner(db(), { name: NAME, url: runner.url, token: TOKEN });
  ws = await newWorkspace(db());
  const viewer = await userWithRole(db(), ws, "viewer");
  apiToken = (await createApiToken(db(), { userId: viewer.id, workspaceId: ws, name: "pages test" })).token;

  const pgUrl = new URL(tdb.url);
  pgProxy = await startTcpProxy(Number(pgUrl.port || 5432), pgUrl.hostname);
  const viaProxy = new URL(tdb.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(pgProxy.port);
  webPort = await closedPort();
  web = await spawnTs(
    "server/test/delivery-web.ts",
    {
      NODE_ENV: "production",
      DATABASE_URL: viaProxy.toString(),
      PORT: String(webPort),
      HOST: "127.0.0.1",
      RUNNER_NAME: NAME,
      RUNNER_URL: runner.url,
      RUNNER_TOKEN: TOKEN,
      // This process's secret: the web process re-registers the runner, and this one's dispatcher must read its token.
      AUTH_SECRET: authSecret({ configured: env().AUTH_SECRET, dataDir: env().DATA_DIR }),
      AUTH_TRUSTED_ORIGINS: `http://127.0.0.1:${webPort}`,
      DATA_DIR: staticDir,
      STATIC_DIR: staticDir,
      POLL_ENDPOINT: "1",
      INGEST_SCAN_MS: "300",
    },
    /^DELIVERY WEB READY/,
  );
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
}, 180_000);

afterAll(async () => {
  hold?.release();
  await browser?.close();
  await dispatcherFor(db()).stop();
  await stopChild(web);
  await runner?.close();
  await engine?.close();
  await pgProxy?.close();
  await tdb?.drop();
  for (const dir of [runsDir, staticDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

type Shown = { status: string; stop: boolean; resume: boolean; delivery: string; tone: string; attempt: number; phase: string; subscribed: boolean };

async function openPage(runId: string): Promise<{ page: Page; shown: () => Promise<Shown>; history: () => Promise<string[]> }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${webPort}/static/run.html?run=${encodeURIComponent(runId)}&token=${encodeURIComponent(apiToken)}`);
  await page.waitForFunction(() => window.__page !== undefined, undefined, { timeout: 15_000 }).catch(() => {
    throw new Error(`the run page did not start: ${errors.join("; ") || "no error reported"}`);
  });
  return {
    page,
    shown: () => page.evaluate(() => window.__page.shown()),
    history: () => page.evaluate(() => window.__page.history),
  };
}

async function startRun(): Promise<string> {
  const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
  const files = templateFiles({ num_steps: 3, groups_per_step: 2, rollouts_per_group: 2, max_concurrency: 4, eval_every: 0 });
  const started = await callerFor(db(), ws, NAME).runs.start({ experimentId, files, kind: "train" });
  if (!started.ok) throw new Error(started.error);
  await dispatcherFor(db()).idle();
  return started.runId;
}

const runRow = (runId: string) => db().run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, attempt: true } });

describe("pages that tell the truth (issue 17 findings 4 and 5)", () => {
  it("4: a page open while its run is stopped and then resumed through the API shows running and Stop within seconds", async () => {
    holdChats();
    const runId = await startRun();
    const { page, shown } = await openPage(runId);
    await until("the page to show the run running, with Stop", shown, (s) => s.status === "running" && s.stop && !s.resume);

    const api = callerFor(db(), ws, NAME);
    await api.runs.stop({ id: runId });
    await until("the run to be stopped in the database", () => runRow(runId), (r) => r.status === "stopped");
    await until("the page to show it stopped, with Resume and no Stop", shown, (s) => s.status === "stopped" && !s.stop && s.resume);
    // A second page opened on the stopped run (someone looking at it): its first runs.get answer is terminal.
    const second = await openPage(runId);
    await until("the second page to show it stopped", second.shown, (s) => s.status === "stopped" && !s.stop && s.resume);

    const resumed = await api.runs.resume({ id: runId });
    expect(resumed).toMatchObject({ ok: true });
    const at = Date.now();
    await until("the database to say running, attempt 2", () => runRow(runId), (r) => r.status === "running" && r.attempt === 2);
    for (const p of [shown, second.shown]) {
      const s = await until("the page to show the resume: running, with Stop", p, (v) => v.status === "running" && v.stop, 15_000);
      expect(s).toMatchObject({ status: "running", stop: true, resume: false, attempt: 2 });
    }
    console.log(`[pages] resume shown on both pages ${Date.now() - at} ms after the API call returned`);

    hold?.release();
    await api.runs.stop({ id: runId });
    await until("the page to show the resumed run stopped", shown, (v) => v.status === "stopped");
    await page.close();
    await second.page.close();
  });

  it("4: a run that does not exist says 'not found' once and never 'queued'", async () => {
    const { page, shown, history } = await openPage("run_that_does_not_exist");
    await until("the page to say not found", shown, (s) => s.status === "not found");
    // Watch it for longer than an active run's poll (5 s), which used to blank the answer back to "queued".
    const seenAt = Date.now();
    await until("a poll period to pass", async () => Date.now() - seenAt, (ms) => ms > 6_000, 10_000);
    expect(await history()).toEqual(["loading", "not found"]);
    expect(await shown()).toMatchObject({ status: "not found", stop: false, resume: false });
    await page.close();
  });

  it("5: the database cut under a running run: 'delayed N s: database unreachable' while the socket is up, 'live' once healed", async () => {
    holdChats();
    const runId = await startRun();
    const { page, shown } = await openPage(runId);
    await until("the page to show the run live, subscribed", shown, (s) => s.status === "running" && s.tone === "live" && s.subscribed);

    await pgProxy.down();
    const cutAt = Date.now();
    const delayed = await until("the page to say delayed", shown, (s) => s.tone === "delayed", 20_000);
    console.log(`[pages] delayed shown ${Date.now() - cutAt} ms after the cut: "${delayed.delivery}"`);
    expect(delayed.delivery).toMatch(/^delayed \d+ s: database (unreachable|not answering)$/);
    // The socket never dropped: an indicator of the socket alone (the old one) said "live" here.
    expect(delayed.phase).toBe("live");
    await page.screenshot({ path: path.join(os.tmpdir(), "rollbook-pages-delayed.png") });
    // It counts on while the outage lasts.
    await until("the delay to count on", shown, (s) => s.tone === "delayed" && Number(/delayed (\d+) s/.exec(s.delivery)?.[1]) >= 5, 20_000);

    await pgProxy.up();
    await until("the page to say live again", shown, (s) => s.tone === "live" && s.status === "running", 30_000);

    // The link hangs instead (no error, no byte): nothing fails, yet nothing answers.
    pgProxy.hang();
    const hungAt = Date.now();
    const stalled = await until("the page to say delayed while the link hangs", shown, (s) => s.tone === "delayed", 30_000);
    console.log(`[pages] delayed shown ${Date.now() - hungAt} ms into the hang: "${stalled.delivery}"`);
    expect(stalled.delivery).toMatch(/^delayed \d+ s: (database not answering|database unreachable|no word from the server)$/);
    expect(stalled.phase).toBe("live");
    await pgProxy.up();
    await until("the page to say live after the hang", shown, (s) => s.tone === "live" && s.status === "running", 40_000);

    hold?.release();
    await callerFor(db(), ws, NAME).runs.stop({ id: runId });
    await until("the page to show the run stopped", shown, (s) => s.status === "stopped");
    await page.close();
  });
});
