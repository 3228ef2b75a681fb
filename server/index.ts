/**
 * Rollbook's one web process: Next (App Router pages and /api/trpc) and socket.io on one HTTP server and
 * one port. Start: `node --no-node-snapshot --import tsx server/index.ts` (NODE_ENV=production serves the
 * `next build` output; otherwise Next's dev server with HMR).
 *
 * Boot order: migrate the database → default workspace and experiment → register the configured runner →
 * Next → socket.io → ingestion (resumes every running run) → runner heartbeats and the run dispatcher → listen. The runner need not be up: runs are
 * refused or failed with a clear reason until it is, and ingestion reconnects with backoff.
 */
import http from "node:http";
import path from "node:path";
import next from "next";
import { Server } from "socket.io";
import { closeDb, describeDb, getDb, migrateDatabase } from "./db";
import { loadEnv } from "./env";
import { attachAdapter } from "./realtime/adapter";
import { setIo, type RollbookIo } from "./realtime/io";
import { attachRealtime } from "./realtime/socket-server";
import { DeliveryHealth, staleMsFor } from "./realtime/delivery-health";
import { originAllowed } from "./auth/origins";
import { refuseDeclaredOversize } from "./http/body-gate";
import { registerRunner, runnerById } from "./runner-client";
import { startupRunnerToken } from "./runner-token";
import { IngestService } from "@/features/run-lifecycle/server";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { RunnerHeartbeat } from "@/features/run-lifecycle/server";
import { AlertsWatcher } from "@/features/flags/server";
import { postIngestSettled } from "@/features/flags/server";
import { prewarmPages, waitForEngine } from "./startup/ready";
import { ensureDefaultExperiment, ensureDefaultWorkspace } from "@/features/workspace/server";

const ROOT = path.resolve(import.meta.dirname, "..");

async function main(): Promise<void> {
  const env = loadEnv();
  // Rollbook runs offline and on private data: Next's anonymous telemetry stays off unless asked for.
  process.env.NEXT_TELEMETRY_DISABLED ??= "1";
  const dev = env.NODE_ENV !== "production";
  const log = (msg: string) => console.log(`[rollbook] ${msg}`);
  // Before anything else: without the runner's token the web server could dispatch nothing.
  const runnerToken = startupRunnerToken(env, (w) => console.warn(`[rollbook] warning: ${w}`));

  log(`database: ${describeDb()}`);
  const applied = await migrateDatabase();
  if (applied.length > 0) log(`applied migrations: ${applied.join(", ")}`);
  const db = await getDb();
  const workspace = await ensureDefaultWorkspace(db);
  await ensureDefaultExperiment(db, workspace.id, { templateRoot: ROOT });
  const runner = await registerRunner(db, { name: env.RUNNER_NAME, url: env.RUNNER_URL, token: runnerToken });
  log(`runner '${runner.name}' at ${runner.url}`);

  const server = http.createServer();
  const app = next({ dev, dir: ROOT, hostname: env.HOST, port: env.PORT, httpServer: server });
  await app.prepare();
  const handle = app.getRequestHandler();
  server.on("request", (req, res) => {
    // socket.io answers its own path (it listens on the same server); everything else is Next's.
    if (req.url?.startsWith("/socket.io/")) return;
    // A body declared over its route's cap is refused before Next reads any of it (server/http/body-gate.ts).
    if (refuseDeclaredOversize(req, res, env)) return;
    // The client address that sign-in rate limits count by: the socket's, unless a proxy we trust in front
    // of us says who the client is. A client-sent X-Forwarded-For would otherwise dodge the limit.
    if (!env.TRUST_PROXY) req.headers["x-forwarded-for"] = req.socket.remoteAddress ?? "";
    handle(req, res).catch((e: unknown) => {
      console.error("[rollbook] request failed:", e);
      if (!res.headersSent) res.writeHead(500).end("Internal server error");
    });
  });

  const io: RollbookIo = new Server(server, {
    path: "/socket.io/",
    serveClient: false,
    // Next's HMR websocket shares this server: let its upgrade requests through untouched.
    destroyUpgrade: false,
    pingInterval: 20_000,
    // A page on another origin may not open a socket (it would carry the user's cookie).
    allowRequest: (req, callback) => callback(null, originAllowed(req.headers.origin)),
  });
  // Before any socket connects: with several web processes, emits reach every process's sockets.
  const adapter = await attachAdapter(io, { databaseUrl: env.DATABASE_URL, redisUrl: env.REDIS_URL }, (m) => console.warn(`[realtime] ${m}`));
  log(adapter.describe);
  setIo(io);
  // What the run pages' "live" indicator says: whether this process reaches the database (ingestion's probe).
  const delivery = new DeliveryHealth({ staleMs: staleMsFor(env.INGEST_LEASE_MS) });
  delivery.attach(io);
  attachRealtime(io, getDb, delivery);

  const ingest = new IngestService(db, {
    runnerFor: (id) => runnerById(db, id),
    lostAfterMs: env.RUNNER_LOST_AFTER_MS,
    artClientSilentMs: env.ART_CLIENT_SILENT_MS,
    leaseMs: env.INGEST_LEASE_MS,
    database: delivery,
  });
  log(`ingest lease holder ${ingest.leases.holder} (INGEST_LEASE_MS ${env.INGEST_LEASE_MS})`);
  await ingest.start();
  // The runner pool: heartbeats (health, "runner lost") and the run queue's dispatcher (services/dispatcher.ts).
  const monitor = new RunnerHeartbeat(db, { heartbeatMs: env.HEARTBEAT_MS, lostAfterMs: env.RUNNER_LOST_AFTER_MS });
  monitor.start();
  const dispatcher = dispatcherFor(db, { pollMs: env.DISPATCH_POLL_MS });
  dispatcher.start();
  const alerts = new AlertsWatcher(db, { stallMs: env.STALL_AFTER_MS });
  alerts.start();

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.PORT, env.HOST, () => resolve());
  });
  const url = `http://${env.HOST}:${env.PORT}`;
  log(`listening on ${url} (${dev ? "development: pages compile on first visit" : "production build"})`);
  // "ready" only when a visitor can press Run: the engine has its model, and the pages are rendered once.
  const readyAbort = new AbortController();
  void (async () => {
    await waitForEngine({ runner: await runnerById(db, runner.id), log, signal: readyAbort.signal });
    if (!dev) await prewarmPages(url.replace("0.0.0.0", "127.0.0.1"), ["/sign-in", "/", "/runs", "/experiments"]);
    console.log(`Rollbook ready on ${url}`);
  })().catch(() => undefined);

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    readyAbort.abort();
    log(`${signal}: shutting down`);
    const force = setTimeout(() => {
      console.error("[rollbook] shutdown took over 10 s; exiting");
      process.exit(1);
    }, 10_000);
    force.unref();
    try {
      alerts.stop();
      delivery.close();
      await monitor.stop();
      await dispatcher.stop();
      await ingest.stop(); // stores what is buffered, then releases the ingest leases
      await postIngestSettled(); // the flags and alerts of what was stored
      await new Promise<void>((resolve) => io.close(() => resolve())); // also closes the HTTP server
      await adapter.close();
      await app.close();
      setIo(undefined);
      await closeDb();
      process.exit(0);
    } catch (e) {
      console.error("[rollbook] shutdown failed:", e);
      process.exit(1);
    }
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((e: unknown) => {
  console.error("[rollbook] failed to start:", e);
  process.exit(1);
});
