/**
 * Delivery without gaps, one test per break, on a whole stack of real processes:
 *
 *   browser / socket.io client ──proxy── web (server/test/delivery-web.ts) ──proxy── runner (synthetic-runner.ts)
 *                                          └──proxy── Postgres (this file's own database)
 *
 * Each test starts a run on the runner (it appends rollouts at a fixed rate to its real event log), breaks
 * one link mid-run — the browser's socket, the web process itself, the web→runner stream, the web→Postgres
 * connections — lets it heal, and then compares three things that must agree exactly: the runner's
 * events.jsonl (seq 1..N), the database's events and trajectories, and what the page folded (every seq,
 * every rollout id, once, in order). The machine's shared Postgres is never restarted: cutting the proxy
 * (resetting its connections and refusing new ones) is what a restart looks like to the web server.
 *   npx vitest run --project server server/realtime/delivery.servertest.ts
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { io } from "socket.io-client";
import { type RunEvent } from "@contracts";
import { followRunLive } from "@/features/run-view";
import { initialRunState, runReducer, type RunViewState } from "@/features/run-view";
import { keepReconnecting, type RollbookSocket } from "@/components/socket";
import { registerRunner } from "../runner-client";
import { createApiToken } from "@/features/workspace/server";
import { closedPort, createRunningRun, createTestDb, newWorkspace, userWithRole, type TestDb } from "../test/harness";
import { spawnTs, stopChild, type Child } from "../test/child-process";
import { buildLivePage } from "../test/live-page-build";
import { startTcpProxy, type TcpProxy } from "../test/tcp-proxy";

/** Rollouts per run, and how fast the runner appends them: a few seconds of a live run. */
const ROLLOUTS = 200;
const PER_SECOND = 40;

async function until<T>(what: string, fn: () => Promise<T> | T, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) {
      const tail = [...(web?.lines ?? []), ...runner.lines].slice(-20).join("\n");
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v).slice(0, 400)}\nweb and runner output:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let tdb: TestDb;
const db = () => tdb.handle.prisma;
let runner: Child;
let web: Child | undefined;
let webEnv: Record<string, string>;
let pgProxy: TcpProxy;
let runnerProxy: TcpProxy;
let webProxy: TcpProxy;
let browser: Browser;
let runsDir: string;
let staticDir: string;
let workspaceId: string;
let runnerId: string;
let apiToken: string;

beforeAll(async () => {
  tdb = await createTestDb();
  runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-delivery-runs-"));
  staticDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-delivery-page-"));
  const runnerToken = randomBytes(24).toString("hex");

  // The browser's page: the app's live subscription and fold, bundled as the app bundles them.
  await buildLivePage(staticDir);

  runner = await spawnTs("server/test/synthetic-runner.ts", { RUNNER_TOKEN: runnerToken, ROLLBOOK_RUNS_DIR: runsDir, RUNNER_NAME: "synthetic" }, /^SYNTHETIC RUNNER READY/);
  runnerProxy = await startTcpProxy(runner.port);
  const pgUrl = new URL(tdb.url);
  pgProxy = await startTcpProxy(Number(pgUrl.port || 5432), pgUrl.hostname);
  const viaProxy = new URL(tdb.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(pgProxy.port);
  const webPort = await closedPort();
  webProxy = await startTcpProxy(webPort);

  runnerId = (await registerRunner(db(), { name: "synthetic", url: `http://127.0.0.1:${runnerProxy.port}`, token: runnerToken })).id;
  workspaceId = await newWorkspace(db());
  const viewer = await userWithRole(db(), workspaceId, "viewer");
  apiToken = (await createApiToken(db(), { userId: viewer.id, workspaceId, name: "delivery test" })).token;

  webEnv = {
    NODE_ENV: "production",
    DATABASE_URL: viaProxy.toString(),
    PORT: String(webPort),
    HOST: "127.0.0.1",
    RUNNER_NAME: "synthetic",
    RUNNER_URL: `http://127.0.0.1:${runnerProxy.port}`,
    RUNNER_TOKEN: runnerToken,
    AUTH_SECRET: randomBytes(24).toString("hex"),
    AUTH_TRUSTED_ORIGINS: `http://127.0.0.1:${webProxy.port}`,
    DATA_DIR: staticDir,
    STATIC_DIR: staticDir,
    INGEST_SCAN_MS: "300",
  };
  web = await spawnTs("server/test/delivery-web.ts", webEnv, /^DELIVERY WEB READY/);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu"],
  });
});

afterAll(async () => {
  await browser?.close();
  await stopChild(web);
  await stopChild(runner);
  await Promise.all([webProxy?.close(), runnerProxy?.close(), pgProxy?.close()]);
  await tdb?.drop();
  for (const dir of [runsDir, staticDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** What a viewer holds: the page's fold, fed by the app's live subscription over a real socket.io client. */
type Shown = Pick<RunViewState, "contiguousSeq" | "maxSeq" | "status"> & { seen: number; rolloutIds: string[] };
interface Viewer {
  state: () => Promise<Shown>;
  close: () => Promise<void>;
}

function nodeViewer(runId: string): Viewer {
  const socket: RollbookSocket = keepReconnecting(
    io(`http://127.0.0.1:${webProxy.port}`, { transports: ["websocket"], reconnectionDelayMax: 1_000, auth: { token: apiToken } }),
  );
  let state = initialRunState;
  const stop = followRunLive({
    socket,
    runId,
    resumeFrom: () => state.contiguousSeq,
    onEvents: (events) => (state = runReducer(state, { type: "events", events })),
    onStatus: (status) => (state = runReducer(state, { type: "status", ...status })),
    onPhase: () => {},
    nextFrame: (fn) => {
      const t = setImmediate(fn);
      return () => clearImmediate(t);
    },
  });
  return {
    state: async () => ({
      contiguousSeq: state.contiguousSeq,
      maxSeq: state.maxSeq,
      status: state.status,
      seen: state.seen.size,
      rolloutIds: state.rollouts.map((r) => r.id),
    }),
    close: async () => {
      stop();
      socket.close();
    },
  };
}

/** The real browser: Chromium on server/test/live-page.ts. */
async function browserViewer(runId: string): Promise<Viewer & { page: Page }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`http://127.0.0.1:${webProxy.port}/static/live.html?run=${runId}&token=${encodeURIComponent(apiToken)}`);
  await page.waitForFunction(() => window.__live !== undefined, undefined, { timeout: 10_000 }).catch(() => {
    throw new Error(`the live page did not start: ${errors.join("; ") || "no error reported"}`);
  });
  return {
    page,
    state: () => page.evaluate(() => window.__live.state()) as Promise<Shown>,
    close: () => page.close(),
  };
}

/** Starts a run on the runner: the run row, then its first half of rollouts. */
async function startRun(): Promise<string> {
  const runId = await createRunningRun(db(), workspaceId);
  await db().run.update({ where: { id: runId }, data: { runnerId } });
  emit(runId, false);
  return runId;
}

/** Has the runner append half the run's rollouts (the second half ends with run.finished). */
function emit(runId: string, finish: boolean): void {
  runner.proc.stdin!.write(JSON.stringify({ cmd: "emit", runId, count: ROLLOUTS / 2, perSecond: PER_SECOND, finish }) + "\n");
}

/** The three views of the finished run must agree: runner log = database = what the viewer folded. */
async function expectSameEverywhere(runId: string, viewer: Viewer): Promise<void> {
  const total = ROLLOUTS + 2; // run.started, the rollouts, run.finished
  await runner.waitFor(new RegExp(`^EMITTED ${runId} ${total}$`), 30_000);
  const runnerLog = fs
    .readFileSync(path.join(runsDir, runId, "events.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as RunEvent);
  expect(runnerLog.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  const runnerRollouts = runnerLog.flatMap((e) => (e.type === "rollout.finished" ? [e.payload.id] : []));

  const run = await until(
    "the database to hold the whole run",
    () => db().run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true, status: true, rolloutCount: true } }),
    (r) => r.lastSeq === total && r.status === "completed",
  );
  expect(run.rolloutCount).toBe(ROLLOUTS);
  const stored = await db().runEvent.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { seq: true, type: true } });
  expect(stored).toEqual(runnerLog.map((e) => ({ seq: e.seq, type: e.type })));
  const trajectories = await db().trajectory.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { id: true } });
  expect(trajectories.map((t) => t.id)).toEqual(runnerRollouts);

  const shown = await until(
    "the viewer to show the whole run",
    () => viewer.state(),
    (s) => s.contiguousSeq === total && s.status === "completed",
  );
  expect(shown.seen).toBe(total);
  expect(shown.maxSeq).toBe(total);
  // Every rollout once, in the runner's order, and nothing else.
  expect(shown.rolloutIds).toEqual(runnerRollouts);
}

/** Waits until the viewer shows the run's first half: the break then falls mid-run, and the second half
 * is appended while the link is broken. */
async function midRun(viewer: Viewer): Promise<number> {
  return until("the first half of the run on the viewer", async () => (await viewer.state()).contiguousSeq, (seq) => seq === 1 + ROLLOUTS / 2);
}

describe("delivery without gaps", () => {
  it("(a) a browser that loses its socket mid-run shows exactly the runner's events once it is back", async () => {
    const runId = await startRun();
    const viewer = await browserViewer(runId);
    await midRun(viewer);
    const connectionsBefore = webProxy.connections;
    await webProxy.down(); // the page's websocket is reset, and reconnects are refused for a while
    await until("the page to notice", () => viewer.page.evaluate(() => window.__live.socket.connected), (c) => !c, 10_000);
    emit(runId, true);
    await sleep(1_500);
    const frozenAt = (await viewer.state()).contiguousSeq;
    await webProxy.up();
    await expectSameEverywhere(runId, viewer);
    // It really lost the socket mid-run: it reconnected, and the run went on without it meanwhile.
    expect(webProxy.connections).toBeGreaterThan(connectionsBefore);
    expect(frozenAt).toBe(1 + ROLLOUTS / 2);
    // What the page shows (its list items' text) is the runner's rollouts, each once, in order.
    const listed = await viewer.page.$$eval("#rollouts li", (items) => items.map((li) => li.textContent?.split(" ")[1]));
    expect(listed).toEqual(Array.from({ length: ROLLOUTS }, (_, i) => `rollout-${i + 1}`));
    await viewer.close();
  });

  it("(b) a web server restarted mid-run: ingestion and every open page resume with no gap and no duplicate", async () => {
    const runId = await startRun();
    const viewer = nodeViewer(runId);
    await midRun(viewer);
    await stopChild(web); // SIGTERM: stores what is buffered, closes every socket
    emit(runId, true);
    await sleep(1_000); // the runner goes on appending meanwhile
    const storedWhileDown = (await db().run.findUniqueOrThrow({ where: { id: runId } })).lastSeq;
    expect(storedWhileDown).toBe(1 + ROLLOUTS / 2); // nothing stored while no web server ran
    web = await spawnTs("server/test/delivery-web.ts", webEnv, /^DELIVERY WEB READY/);
    await expectSameEverywhere(runId, viewer);
    await viewer.close();
  });

  it("(c) a dropped runner link: ingestion resumes after the stored lastSeq, and the page misses nothing", async () => {
    const runId = await startRun();
    const viewer = nodeViewer(runId);
    await midRun(viewer);
    await runnerProxy.down(); // the web server's event stream from the runner is cut, and reconnects refused
    emit(runId, true);
    await sleep(1_500);
    const storedWhileCut = (await db().run.findUniqueOrThrow({ where: { id: runId } })).lastSeq;
    expect(storedWhileCut).toBe(1 + ROLLOUTS / 2); // the stream really was cut
    const linksBefore = runnerProxy.connections;
    await runnerProxy.up();
    await expectSameEverywhere(runId, viewer);
    expect(runnerProxy.connections).toBeGreaterThan(linksBefore); // the web server opened the stream again
    await viewer.close();
  });

  it("(d) Postgres restarted mid-run (its connections reset, new ones refused for 3 s): the web server recovers", async () => {
    const runId = await startRun();
    const viewer = nodeViewer(runId);
    await midRun(viewer);
    await pgProxy.down();
    emit(runId, true);
    await sleep(3_000);
    // Nothing could be stored, so nothing was shown: the page never runs ahead of the database.
    expect((await viewer.state()).contiguousSeq).toBe(1 + ROLLOUTS / 2);
    await pgProxy.up();
    await expectSameEverywhere(runId, viewer);
    expect(web!.proc.exitCode).toBeNull(); // it rode the outage out instead of crashing
    await viewer.close();
  });
});
