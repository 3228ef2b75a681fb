/**
 * The live-delivery benchmarks' stack, all real processes: a fresh Postgres database (created and dropped
 * here; Postgres at TEST_DATABASE_URL), a runner process with synthetic runs (server/test/synthetic-runner.ts),
 * and the web server's delivery path (server/test/delivery-web.ts: ingestion + socket.io) serving the live
 * page (server/test/live-page.ts, the app's run-live.ts + run-state.ts) — no proxies in between.
 */
import { randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDatabase } from "../server/db";
import { createPgDatabase, dropPgDatabase } from "../server/db-migrate";
import { registerRunner } from "../server/runner-client";
import { createApiToken } from "@/features/workspace/server";
import { spawnTs, stopChild, type Child } from "../server/test/child-process";
import { closedPort, createRunningRun, newWorkspace, userWithRole } from "../server/test/harness";
import { buildLivePage } from "../server/test/live-page-build";

const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

export interface LiveStack {
  webUrl: string;
  apiToken: string;
  runner: Child;
  db: Awaited<ReturnType<typeof openDatabase>>["prisma"];
  /** A running run on the runner, nothing emitted yet. */
  newRun(): Promise<string>;
  /** Has the runner append `count` rollouts at `perSecond` (then run.finished unless finish is false);
   * resolves with the last seq once all are appended. The first call also appends run.started. */
  emit(runId: string, count: number, perSecond: number, finish?: boolean): Promise<number>;
  /** Resolves once the database holds the run up to `seq` (ingestion is following it). */
  stored(runId: string, seq: number): Promise<void>;
  close(): Promise<void>;
}

export async function startLiveStack(opts: { webPort?: number } = {}): Promise<LiveStack> {
  const name = `rollbook_bench_live_${randomUUID().slice(0, 8)}`;
  const url = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  await handle.migrate();
  const db = handle.prisma;
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-bench-live-"));
  const staticDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-bench-page-"));
  await buildLivePage(staticDir);
  const token = randomBytes(24).toString("hex");
  const runner = await spawnTs("server/test/synthetic-runner.ts", { RUNNER_TOKEN: token, ROLLBOOK_RUNS_DIR: runsDir, RUNNER_NAME: "bench" }, /^SYNTHETIC RUNNER READY/);
  const runnerId = (await registerRunner(db, { name: "bench", url: `http://127.0.0.1:${runner.port}`, token })).id;
  const workspaceId = await newWorkspace(db);
  const viewer = await userWithRole(db, workspaceId, "viewer");
  const apiToken = (await createApiToken(db, { userId: viewer.id, workspaceId, name: "bench" })).token;
  const webPort = opts.webPort ?? (await closedPort());
  const web = await spawnTs(
    "server/test/delivery-web.ts",
    {
      NODE_ENV: "production",
      DATABASE_URL: url,
      PORT: String(webPort),
      HOST: "127.0.0.1",
      RUNNER_NAME: "bench",
      RUNNER_URL: `http://127.0.0.1:${runner.port}`,
      RUNNER_TOKEN: token,
      AUTH_SECRET: randomBytes(24).toString("hex"),
      DATA_DIR: staticDir,
      STATIC_DIR: staticDir,
      INGEST_SCAN_MS: "200",
      POLL_ENDPOINT: "1",
    },
    /^DELIVERY WEB READY/,
  );
  return {
    webUrl: `http://127.0.0.1:${webPort}`,
    apiToken,
    runner,
    db,
    async newRun() {
      const runId = await createRunningRun(db, workspaceId);
      await db.run.update({ where: { id: runId }, data: { runnerId } });
      return runId;
    },
    async emit(runId, count, perSecond, finish = true) {
      const before = runner.lines.length;
      runner.proc.stdin!.write(JSON.stringify({ cmd: "emit", runId, count, perSecond, finish }) + "\n");
      const pattern = new RegExp(`^EMITTED ${runId} `);
      const deadline = Date.now() + 60_000 + (count / perSecond) * 2_000;
      for (;;) {
        const line = runner.lines.slice(before).find((l) => pattern.test(l));
        if (line) return Number(line.split(" ").at(-1));
        if (Date.now() > deadline) throw new Error(`runner did not finish emitting ${runId}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stored(runId, seq) {
      while ((await db.run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true } })).lastSeq < seq) {
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async close() {
      await stopChild(web);
      await stopChild(runner);
      await handle.close();
      await dropPgDatabase(adminUrl, name);
      for (const dir of [runsDir, staticDir]) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
export const median = (xs: number[]): number => percentile(xs, 50);
