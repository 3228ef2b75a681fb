/**
 * The breaks on the delivery path, long: a runner process whose run appends rollouts at a fixed rate to its
 * real event log (server/test/synthetic-runner.ts: the real runner server, no engine), web processes
 * ingesting it into Postgres and serving a page that follows it over socket.io.
 *   db-cut   — the web→Postgres link cut mid-run (connections reset, new ones refused) for --db-cut-s
 *   db-hang  — the same link hung mid-run (nothing moves, nothing closes) for --db-hang-s
 *   web-kill — the web process that ingests the run SIGKILLed mid-run; a second one, which the page is
 *              connected to, takes the run's ingest lease over
 * The runner keeps appending throughout the break, and for a while after it.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnTs, stopChild, type Child } from "../../server/test/child-process";
import { createRunningRun } from "../../server/test/harness";
import { readRunnerLog, settled, verdict, type Row } from "./verdict";
import { until, type ChaosStack } from "./stack";
import { openViewer } from "./viewer";

interface SyntheticRunner {
  child: Child;
  runsDir: string;
  info: { name: string; url: string; token: string };
  close(): Promise<void>;
}

async function startSyntheticRunner(): Promise<SyntheticRunner> {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-chaos-synthetic-"));
  const token = randomBytes(24).toString("hex");
  const child = await spawnTs("server/test/synthetic-runner.ts", { RUNNER_TOKEN: token, ROLLBOOK_RUNS_DIR: runsDir, RUNNER_NAME: "chaos-synthetic" }, /^SYNTHETIC RUNNER READY/, 180_000);
  return {
    child,
    runsDir,
    info: { name: "chaos-synthetic", url: `http://127.0.0.1:${child.port}`, token },
    close: async () => {
      await stopChild(child);
      fs.rmSync(runsDir, { recursive: true, force: true });
    },
  };
}

/** A running run on the registered runner, then `rollouts` appended at `rate`/s and run.finished. */
async function startSyntheticRun(stack: ChaosStack, runner: SyntheticRunner, rollouts: number, rate: number): Promise<string> {
  const row = await stack.db.runner.findFirstOrThrow({ where: { name: runner.info.name }, select: { id: true } });
  const runId = await createRunningRun(stack.db, stack.workspaceId);
  await stack.db.run.update({ where: { id: runId }, data: { runnerId: row.id } });
  runner.child.proc.stdin!.write(JSON.stringify({ cmd: "emit", runId, count: rollouts, perSecond: rate, finish: true }) + "\n");
  return runId;
}

const storedSeq = async (stack: ChaosStack, runId: string) =>
  (await stack.db.run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true } })).lastSeq;

export interface DbBreakOptions {
  mode: "cut" | "hang";
  breakS: number;
  rate: number;
}

/** The database link broken for breakS seconds a third of the way in; the run goes on 30 s past it (quick: 5 s). */
export async function dbBreak(stack: ChaosStack, opts: DbBreakOptions & { afterS: number }): Promise<Row> {
  const name = opts.mode === "cut" ? `db cut ${opts.breakS} s` : `db hang ${opts.breakS} s`;
  const notes: string[] = [];
  const t0 = Date.now();
  const runner = await startSyntheticRunner();
  const web = await stack.startWeb(runner.info, { INGEST_SCAN_MS: "300", RUNNER_LOST_AFTER_MS: "600000" });
  try {
    const before = Math.max(10, Math.round(opts.rate * 5));
    const rollouts = before + Math.round(opts.rate * (opts.breakS + opts.afterS));
    const runId = await startSyntheticRun(stack, runner, rollouts, opts.rate);
    const viewer = openViewer(web.url, stack.apiToken, runId);
    const tRun = Date.now();
    await until(() => viewer.state().contiguousSeq, (s) => s >= before / 2, 120_000, 50);
    const shownAtBreak = viewer.state().contiguousSeq;
    if (opts.mode === "cut") await stack.pgProxy.down();
    else stack.pgProxy.hang();
    const broke = Date.now();
    // The break lasts breakS: the case's parameter, not a wait for something to happen.
    let maxShownDuring = shownAtBreak;
    while (Date.now() - broke < opts.breakS * 1000) {
      maxShownDuring = Math.max(maxShownDuring, viewer.state().contiguousSeq);
      await new Promise((r) => setTimeout(r, 250));
    }
    const loggedDuring = readRunnerLog(runner.runsDir, runId).length;
    await stack.pgProxy.up();
    const healed = Date.now();
    notes.push(`runner logged ${loggedDuring} while the page showed ${shownAtBreak} → ${maxShownDuring} during the break`);
    const caughtUp = await until(async () => (await storedSeq(stack, runId)) >= loggedDuring, (ok) => ok, 300_000, 100);
    notes.push(caughtUp.ok ? `database caught up with the break's backlog ${((Date.now() - healed) / 1000).toFixed(1)} s after the link came back` : "the database never caught up with the break's backlog");
    await runner.child.waitFor(new RegExp(`^EMITTED ${runId} `), 60_000 + ((rollouts / opts.rate) * 1000 - (Date.now() - tRun)) * 2);
    await settled(stack.db, runId, () => readRunnerLog(runner.runsDir, runId).length, viewer);
    if (web.proc.exitCode !== null || web.proc.signalCode !== null) notes.push("the web process died during the outage");
    const row = await verdict(name, stack.db, runId, readRunnerLog(runner.runsDir, runId), viewer, "completed", (Date.now() - t0) / 1000, notes);
    viewer.close();
    return row;
  } finally {
    await stopChild(web);
    await runner.close();
  }
}

export interface WebKillOptions {
  rollouts: number;
  rate: number;
}

/** Web 1 ingests, the page watches through web 2; web 1 is SIGKILLed a third of the way in. */
export async function webKill(stack: ChaosStack, opts: WebKillOptions): Promise<Row> {
  const name = `web SIGKILL (${opts.rollouts} rollouts)`;
  const notes: string[] = [];
  const t0 = Date.now();
  const runner = await startSyntheticRunner();
  const env = { INGEST_SCAN_MS: "300", RUNNER_LOST_AFTER_MS: "600000" };
  const web1 = await stack.startWeb(runner.info, env);
  const holder1 = web1.lines.find((l) => l.startsWith("LEASE HOLDER "))!.slice("LEASE HOLDER ".length);
  let web2: Awaited<ReturnType<ChaosStack["startWeb"]>> | undefined;
  try {
    const runId = await startSyntheticRun(stack, runner, opts.rollouts, opts.rate);
    const holder = async () => (await stack.db.ingestLease.findUnique({ where: { runId } }))?.holder ?? null;
    await until(holder, (h) => h === holder1, 120_000, 100);
    web2 = await stack.startWeb(runner.info, env);
    const holder2 = web2.lines.find((l) => l.startsWith("LEASE HOLDER "))!.slice("LEASE HOLDER ".length);
    const viewer = openViewer(web2.url, stack.apiToken, runId);
    await until(async () => storedSeq(stack, runId), (s) => s >= opts.rollouts / 3, 600_000, 100);
    web1.proc.kill("SIGKILL");
    await new Promise((r) => web1.proc.once("exit", r));
    const killed = Date.now();
    const took = await until(holder, (h) => h === holder2, 120_000, 100);
    notes.push(took.ok ? `web 2 took the ingest lease ${((Date.now() - killed) / 1000).toFixed(1)} s after the kill` : `web 2 never took the lease (holder ${took.value})`);
    await runner.child.waitFor(new RegExp(`^EMITTED ${runId} `), 60_000 + (opts.rollouts / opts.rate) * 2_000);
    await settled(stack.db, runId, () => readRunnerLog(runner.runsDir, runId).length, viewer);
    // What each process stored (INGEST_TRACE): web 1 up to the kill, web 2 after it.
    const fresh = (w: typeof web1) => w.lines.filter((l) => l.startsWith(`INGESTED ${runId} `)).reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    notes.push(`events new to the database: ${fresh(web1)} by web 1 (as printed before the kill), ${fresh(web2)} by web 2`);
    const row = await verdict(name, stack.db, runId, readRunnerLog(runner.runsDir, runId), viewer, "completed", (Date.now() - t0) / 1000, notes);
    viewer.close();
    return row;
  } finally {
    if (web2) await stopChild(web2);
    await runner.close();
  }
}
