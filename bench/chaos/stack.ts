/**
 * What every chaos case stands on: a fresh Postgres database of its own (created and dropped here; Postgres at
 * TEST_DATABASE_URL) reached by the web processes through a TCP proxy (so the bench can cut or hang that link
 * without touching the machine's shared Postgres), a workspace with a viewer's API token (what a page's socket
 * presents), and web processes (server/test/delivery-web.ts: the web server's ingestion and socket.io as
 * server/index.ts boots them) started on demand.
 */
import { randomBytes, randomUUID } from "node:crypto";
import os from "node:os";
import { openDatabase } from "../../server/db";
import { createPgDatabase, dropPgDatabase } from "../../server/db-migrate";
import { createApiToken } from "@/features/workspace/server";
import { spawnTs, stopChild, type Child } from "../../server/test/child-process";
import { closedPort, newWorkspace, userWithRole } from "../../server/test/harness";
import { startTcpProxy, type TcpProxy } from "../../server/test/tcp-proxy";

const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

export type Prisma = Awaited<ReturnType<typeof openDatabase>>["prisma"];

export interface Web extends Child {
  url: string;
}

export interface ChaosStack {
  /** The bench's own client: straight to Postgres, never through the proxy it breaks. */
  db: Prisma;
  dbUrl: string;
  /** Between the web processes and Postgres. */
  pgProxy: TcpProxy;
  workspaceId: string;
  apiToken: string;
  /** A web process (ingestion + socket.io) on the database through the proxy; `env` adds to or overrides its settings. */
  startWeb(runner: { name: string; url: string; token: string }, env?: Record<string, string>): Promise<Web>;
  close(): Promise<void>;
}

export async function startChaosStack(): Promise<ChaosStack> {
  const name = `rollbook_bench_chaos_${randomUUID().slice(0, 8)}`;
  const dbUrl = await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url: dbUrl });
  await handle.migrate();
  const db = handle.prisma;
  const target = new URL(dbUrl);
  const pgProxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  const viaProxy = new URL(dbUrl);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(pgProxy.port);
  const workspaceId = await newWorkspace(db);
  const viewer = await userWithRole(db, workspaceId, "viewer");
  const apiToken = (await createApiToken(db, { userId: viewer.id, workspaceId, name: "chaos bench" })).token;
  // Web servers sharing a database share AUTH_SECRET (the runner tokens are sealed under it) — and the bench
  // process acts as one too where it starts or resumes a run (tRPC caller, dispatcher).
  const authSecret = (process.env.AUTH_SECRET ??= randomBytes(24).toString("hex"));
  const webs: Web[] = [];

  return {
    db,
    dbUrl,
    pgProxy,
    workspaceId,
    apiToken,
    async startWeb(runner, env = {}) {
      const port = await closedPort();
      const child = await spawnTs(
        "server/test/delivery-web.ts",
        {
          NODE_ENV: "production",
          DATABASE_URL: viaProxy.toString(),
          PORT: String(port),
          HOST: "127.0.0.1",
          RUNNER_NAME: runner.name,
          RUNNER_URL: runner.url,
          RUNNER_TOKEN: runner.token,
          AUTH_SECRET: authSecret,
          DATA_DIR: os.tmpdir(), // unused: AUTH_SECRET and DATABASE_URL are set
          INGEST_TRACE: "1",
          REDIS_URL: "",
          ...env,
        },
        /^DELIVERY WEB READY/,
        180_000, // tsx compiling the server on a loaded machine
      );
      const web = Object.assign(child, { url: `http://127.0.0.1:${port}` });
      webs.push(web);
      return web;
    },
    async close() {
      for (const w of webs) {
        if (w.proc.exitCode === null && w.proc.signalCode === null) await stopChild(w);
      }
      await pgProxy.close();
      await handle.close();
      await dropPgDatabase(adminUrl, name);
    },
  };
}

/** Polls until `ok`, or gives up after `ms` and returns the last value (a case reports what it saw; it does not throw). */
export async function until<T>(read: () => Promise<T> | T, ok: (v: T) => boolean, ms: number, everyMs = 200): Promise<{ value: T; ok: boolean }> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return { value, ok: true };
    if (Date.now() > end) return { value, ok: false };
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
