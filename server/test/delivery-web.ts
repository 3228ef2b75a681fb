/**
 * The web server's delivery path as its own process: the same database client, runner registration,
 * ingestion and socket.io handlers server/index.ts boots, on one HTTP server — without Next, whose
 * production build the server tests run before (and whose pages the delivery tests do not need: they
 * read what the socket delivers). Shuts down like server/index.ts (SIGTERM: store what is buffered, close).
 *
 *   DATABASE_URL=… PORT=… RUNNER_NAME=… RUNNER_URL=… RUNNER_TOKEN=… node --no-node-snapshot --import tsx server/test/delivery-web.ts
 *
 * Several of them on one database share the runs (the ingest lease) and live delivery (the socket.io
 * adapter: REDIS_URL, else Postgres), as server/index.ts does.
 *
 * Optional: INGEST_SCAN_MS (how often ingestion looks for running runs; default 500), INGEST_LEASE_MS,
 * INGEST_TRACE=1 (prints `INGESTED <runId> <first seq> <last seq> <fresh>` for every batch this process
 * stored, and `LEASE HOLDER <id>`: the multi-process tests count who ingested what), STATIC_DIR (files
 * served at /static/<name>: the browser test's page) and POLL_ENDPOINT=1 (GET /poll?run=&after=: the
 * stored events, unauthenticated, for the polling baseline of bench/live-latency.ts only; and GET /run-snapshot?run=:
 * a run's status, attempt and last seq, as runs.get says them, for server/test/run-page.ts).
 * Prints `DELIVERY WEB READY <port>`.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { Server } from "socket.io";
import { closeDb, getDb } from "../db";
import { env } from "../env";
import { originAllowed } from "../auth/origins";
import { attachAdapter } from "../realtime/adapter";
import { setIo, type RollbookIo } from "../realtime/io";
import { attachRealtime } from "../realtime/socket-server";
import { DeliveryHealth, staleMsFor } from "../realtime/delivery-health";
import { registerRunner, runnerById } from "../runner-client";
import { IngestService } from "@/features/run-lifecycle/server";
import { rowToEvent } from "../run-convert";

async function main(): Promise<void> {
  const e = env();
  const db = await getDb();
  await registerRunner(db, { name: e.RUNNER_NAME, url: e.RUNNER_URL, token: e.RUNNER_TOKEN! });

  const staticDir = process.env.STATIC_DIR;
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith("/socket.io/")) return;
    const url = new URL(req.url ?? "/", "http://x");
    const pathname = url.pathname;
    if (pathname === "/poll" && process.env.POLL_ENDPOINT === "1") {
      // The polling baseline of bench/live-latency.ts (what a UI that polls its database does), with no
      // authentication: never set POLL_ENDPOINT outside a benchmark.
      const runId = url.searchParams.get("run") ?? "";
      const after = Number(url.searchParams.get("after") ?? 0);
      void db.runEvent
        .findMany({ where: { runId, seq: { gt: after } }, orderBy: { seq: "asc" }, take: 1_000 })
        .then((rows) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(rows.map(rowToEvent))))
        .catch((err: unknown) => res.writeHead(500).end(String(err)));
      return;
    }
    if (pathname === "/run-snapshot" && process.env.POLL_ENDPOINT === "1") {
      // What runs.get says about a run's status, for server/test/run-page.ts (unauthenticated: tests only).
      void db.run
        .findUnique({ where: { id: url.searchParams.get("run") ?? "" }, select: { status: true, attempt: true, lastSeq: true } })
        .then((run) => (run ? res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(run)) : res.writeHead(404).end("not found")))
        .catch((err: unknown) => res.writeHead(500).end(String(err)));
      return;
    }
    const name = staticDir && pathname.startsWith("/static/") ? path.basename(pathname) : null;
    const file = name ? path.join(staticDir!, name) : null;
    if (!file || !fs.existsSync(file)) return void res.writeHead(404).end("not found");
    res.writeHead(200, { "content-type": file.endsWith(".html") ? "text/html" : "text/javascript" }).end(fs.readFileSync(file));
  });
  const io: RollbookIo = new Server(server, {
    path: "/socket.io/",
    serveClient: false,
    pingInterval: 20_000,
    allowRequest: (req, callback) => callback(null, originAllowed(req.headers.origin)),
  });
  const adapter = await attachAdapter(io, { databaseUrl: e.DATABASE_URL, redisUrl: e.REDIS_URL }, (m) => console.warn(`[realtime] ${m}`));
  console.log(`ADAPTER ${adapter.kind}`);
  setIo(io);
  const delivery = new DeliveryHealth({ staleMs: staleMsFor(e.INGEST_LEASE_MS), heartbeatMs: Number(process.env.DELIVERY_HEARTBEAT_MS ?? 2_000) });
  delivery.attach(io);
  attachRealtime(io, getDb, delivery);
  const trace = process.env.INGEST_TRACE === "1";
  const ingest = new IngestService(db, {
    runnerFor: (id) => runnerById(db, id),
    scanMs: Number(process.env.INGEST_SCAN_MS ?? 500),
    leaseMs: e.INGEST_LEASE_MS,
    lostAfterMs: e.RUNNER_LOST_AFTER_MS,
    log: (m) => console.warn(`[ingest] ${m}`),
    database: delivery,
    onStored: trace
      ? (runId, batch, res) => console.log(`INGESTED ${runId} ${Math.min(...batch.map((x) => x.seq))} ${Math.max(...batch.map((x) => x.seq))} ${res.fresh.length}`)
      : undefined,
  });
  if (trace) console.log(`LEASE HOLDER ${ingest.leases.holder}`);
  await ingest.start();
  await new Promise<void>((resolve) => server.listen(e.PORT, e.HOST, () => resolve()));
  console.log(`DELIVERY WEB READY ${e.PORT}`);

  const shutdown = async () => {
    await ingest.stop();
    await new Promise<void>((resolve) => io.close(() => resolve()));
    await adapter.close();
    setIo(undefined);
    await closeDb();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown());
  process.once("SIGINT", () => void shutdown());
}

main().catch((err: unknown) => {
  console.error("[delivery-web] failed to start:", err);
  process.exit(1);
});
