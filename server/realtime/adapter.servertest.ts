/**
 * The Postgres socket.io adapter through a cut database link (issue 17, pages): two web processes' socket.io
 * servers share one database; web A's link is cut (connections reset, new ones refused) and healed. Its
 * broadcasts must reach the sockets on web B again afterwards, every time.
 *
 * Why this can fail: @socket.io/postgres-adapter keeps one pool client checked out for LISTEN and, when that
 * connection ends, takes another without ever releasing the dead one. The pool has two connections (one
 * LISTEN, one for every NOTIFY), so after one cut the new LISTEN takes the last one and every NOTIFY waits
 * for a connection forever: web A's events never reach another process's pages again.
 *   npx vitest run --project server server/realtime/adapter.servertest.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Server } from "socket.io";
import { io as connect, type Socket } from "socket.io-client";
import { attachAdapter, type AttachedAdapter } from "./adapter";
import type { RollbookIo } from "./io";
import { createTestDb, type TestDb } from "../test/harness";
import { startTcpProxy, type TcpProxy } from "../test/tcp-proxy";

let tdb: TestDb;
let proxyA: TcpProxy;
const webs: { io: RollbookIo; http: http.Server; adapter: AttachedAdapter; port: number }[] = [];
/** A socket on web A and one on web B, each in the room "run:x". */
let onA: Socket;
let client: Socket;
const logs: string[] = [];

async function web(databaseUrl: string) {
  const server = http.createServer();
  const io: RollbookIo = new Server(server, { serveClient: false });
  const adapter = await attachAdapter(io, { databaseUrl }, (m) => logs.push(m));
  io.on("connection", (s) => void s.join("run:x"));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const w = { io, http: server, adapter, port: (server.address() as AddressInfo).port };
  webs.push(w);
  return w;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; adapter log: ${logs.slice(-5).join(" | ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  tdb = await createTestDb();
  const url = new URL(tdb.url);
  proxyA = await startTcpProxy(Number(url.port || 5432), url.hostname);
  const viaProxy = new URL(tdb.url);
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String(proxyA.port);
  await web(viaProxy.toString()); // A: through the proxy
  const b = await web(tdb.url); // B: direct
  client = connect(`http://127.0.0.1:${b.port}`, { transports: ["websocket"] });
  onA = connect(`http://127.0.0.1:${webs[0]!.port}`, { transports: ["websocket"] });
  await until("the clients on web A and B", () => client.connected && onA.connected);
});

afterAll(async () => {
  // A pool whose LISTEN client leaked never ends (it waits for that client): bounded, so the failure is the test's.
  const bounded = (p: Promise<void>) => Promise.race([p, new Promise<void>((r) => setTimeout(r, 5_000).unref())]);
  client?.close();
  onA?.close();
  for (const w of webs) {
    await new Promise<void>((r) => w.io.close(() => r()));
    await bounded(w.adapter.close());
  }
  await proxyA?.close();
  await tdb?.drop();
});

describe("Postgres adapter through a cut database link", () => {
  it("web A's broadcasts reach web B's sockets, and B's reach A's, again after each of three cuts", async () => {
    const [a, b] = webs as [(typeof webs)[0], (typeof webs)[0]];
    const got: number[] = [];
    const gotOnA: number[] = [];
    // Web A sends positive numbers, web B negative ones; each side counts only the other's.
    client.on("run:event" as never, (n: number) => void (n > 0 && got.push(n)));
    onA.on("run:event" as never, (n: number) => void (n < 0 && gotOnA.push(n)));
    // Until web A's LISTEN and NOTIFY path works (the adapter connects in the background).
    let n = 0;
    await until("a first broadcast from web A", () => {
      a.io.to("run:x").emit("run:event", ++n as never);
      return got.length > 0;
    });
    for (let cut = 1; cut <= 3; cut++) {
      await proxyA.down(); // resets every connection of web A's pool, LISTEN included
      await proxyA.up();
      // B → A needs web A's LISTEN back (the adapter reconnects it 1-3 s after the cut) ...
      const beforeOnA = gotOnA.length;
      await until(`a broadcast from web B to reach web A after cut ${cut}`, () => {
        b.io.to("run:x").emit("run:event", -++n as never);
        return gotOnA.length > beforeOnA;
      });
      // ... and then A → B needs a pool connection for NOTIFY, which a leaked LISTEN client would hold.
      const before = got.length;
      await until(`a broadcast from web A to reach web B after cut ${cut}`, () => {
        a.io.to("run:x").emit("run:event", ++n as never);
        return got.length > before;
      });
    }
    expect(got.length).toBeGreaterThan(3);
  });
});
