/**
 * The Postgres socket.io adapter through a database outage: its LISTEN connection reset (Postgres restarted,
 * the link cut) and reconnected, a broadcast must still reach the process's own sockets. It did not: the
 * adapter never gave the dead LISTEN client back to its two-connection pool, the reconnected LISTEN took the
 * other one, every NOTIFY then waited for a free connection forever — and socket.io's cluster adapter
 * broadcasts to local sockets only after publishing, so live delivery from that web process stopped for good
 * (found by bench/chaos.ts, database cut). The short delivery test (3 s cut) missed it: its whole backlog was
 * emitted before the adapter's reconnect timer fired.
 *   npx vitest run --project server server/realtime/adapter-own-sockets.servertest.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { Server } from "socket.io";
import { io as connect, type Socket } from "socket.io-client";
import { createTestDb, type TestDb } from "../test/harness";
import { startTcpProxy, type TcpProxy } from "../test/tcp-proxy";
import { attachAdapter, type AttachedAdapter } from "./adapter";
import type { RollbookIo } from "./io";

let tdb: TestDb;
let proxy: TcpProxy;
let server: http.Server;
let io: Server;
let adapter: AttachedAdapter;
let client: Socket;
let observer: pg.Client;
const received: number[] = [];

async function until<T>(what: string, read: () => Promise<T> | T, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The backend pid of the adapter's LISTEN connection, seen from a connection of our own (not through the proxy). */
async function listenPid(): Promise<number | null> {
  const { rows } = await observer.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN %'",
  );
  return rows[0]?.pid ?? null;
}

beforeAll(async () => {
  tdb = await createTestDb();
  observer = new pg.Client({ connectionString: tdb.url });
  await observer.connect();
  const target = new URL(tdb.url);
  proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  const viaProxy = new URL(tdb.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(proxy.port);
  server = http.createServer();
  io = new Server(server);
  // The app's io is typed with its events; this one carries a test event of its own.
  adapter = await attachAdapter(io as unknown as RollbookIo, { databaseUrl: viaProxy.toString() }, () => {});
  io.on("connection", (socket) => void socket.join("room"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  client = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { transports: ["websocket"] });
  client.on("tick", (n: number) => received.push(n));
  await until("the client to connect", () => client.connected, (c) => c);
});

afterAll(async () => {
  client?.close();
  await new Promise<void>((r) => (io ? io.close(() => r()) : r()));
  await adapter?.close();
  await proxy?.close();
  await observer?.end();
  await tdb?.drop();
});

/** Emits `n` to the room (through the adapter, as emitRunEvents does) and waits for the client to get it. */
async function delivered(n: number): Promise<void> {
  io.to("room").emit("tick", n);
  await until(`tick ${n} to reach the process's own socket`, () => received.includes(n), (ok) => ok, 15_000);
}

describe("the Postgres socket.io adapter through a database outage", () => {
  it("keeps delivering to the process's own sockets after its LISTEN connection was reset and came back", async () => {
    const before = await until("the adapter's LISTEN", listenPid, (p) => p !== null);
    await delivered(1);

    await proxy.down(); // every connection reset, new ones refused: a restarting Postgres
    await until("the old LISTEN backend to go", listenPid, (p) => p !== before);
    await proxy.up();
    await until("the adapter to LISTEN again", listenPid, (p) => p !== null && p !== before);

    // Before the fix the pool's two connections were the dead LISTEN client (never released) and the new
    // one: these waited for a connection forever, and so did every broadcast after them.
    await delivered(2);
    await delivered(3);
    expect(received).toEqual([1, 2, 3]);
  }, 120_000);
});
