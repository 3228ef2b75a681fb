/**
 * socket.io across several web processes: an emit to a run's room in the process that ingests the run
 * reaches the sockets connected to every other process too, through infrastructure the project already has.
 *
 * - REDIS_URL set: @socket.io/redis-adapter over Redis pub/sub (two `redis` clients: one publishes, one
 *   subscribes). One connection publishes, in order; payloads of any size.
 * - else DATABASE_URL (Postgres): @socket.io/postgres-adapter over LISTEN/NOTIFY, on a pg Pool of its own.
 *   A payload over NOTIFY's 8,000 bytes goes through the socket_io_attachments table (a Prisma migration
 *   creates it; the adapter deletes old rows itself). The pool has two connections: the adapter keeps one
 *   for LISTEN, so every NOTIFY and attachment goes through the other, one after another, in emit order.
 *   An attachment is read back asynchronously on the receiving side, so a big event can arrive after the
 *   small one emitted behind it: pages fold by seq (features/run-view/components/run-state.ts), which puts it back.
 * - else (PGlite): no adapter. The embedded database is single-process by construction, so there is only
 *   ever one web process, and the default in-memory adapter is all it needs.
 *
 * Room joins and leaves stay local to the process the socket is connected to (the adapter only carries
 * broadcasts and cross-process requests such as fetchSockets), so the subscribe protocol is unchanged: the
 * receiving process joins the room, then reads the stored tail from the shared database.
 */
import pg from "pg";
import { createAdapter as createPostgresAdapter } from "@socket.io/postgres-adapter";
import { createAdapter as createRedisAdapter } from "@socket.io/redis-adapter";
import { createClient } from "redis";
import type { RollbookIo } from "./io";

export interface AdapterSettings {
  databaseUrl?: string;
  redisUrl?: string;
}

export interface AttachedAdapter {
  /** "redis", "postgres" or "none": what the startup log reports. */
  kind: "redis" | "postgres" | "none";
  describe: string;
  /** Closes the adapter's own connections; call after io.close(). */
  close: () => Promise<void>;
}

const redact = (url: string) => url.replace(/\/\/[^@/]*@/, "//***@");

/** Attaches the adapter the settings call for (see the file comment) and says which. */
export async function attachAdapter(io: RollbookIo, settings: AdapterSettings, log: (msg: string) => void): Promise<AttachedAdapter> {
  if (settings.redisUrl) {
    const pub = createClient({ url: settings.redisUrl });
    const sub = pub.duplicate();
    // Without listeners a connection error would be thrown; the client reconnects by itself.
    pub.on("error", (e: Error) => log(`redis (publish): ${e.message}`));
    sub.on("error", (e: Error) => log(`redis (subscribe): ${e.message}`));
    await Promise.all([pub.connect(), sub.connect()]);
    io.adapter(createRedisAdapter(pub, sub));
    return {
      kind: "redis",
      describe: `socket.io across web processes: Redis adapter at ${redact(settings.redisUrl)}`,
      close: async () => {
        await Promise.allSettled([pub.quit(), sub.quit()]);
      },
    };
  }
  if (settings.databaseUrl) {
    const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: 2 });
    pool.on("error", (e) => log(`postgres adapter: ${e.message}`));
    // The adapter keeps one client checked out for LISTEN and listens only for its "end" (to reconnect): a
    // reset connection (Postgres restarted) would raise an unhandled "error" on it and crash the process.
    // And it never releases that client: the dead one would hold one of the pool's two connections for good,
    // the new LISTEN the other, and every NOTIFY would wait for a connection forever (after one cut of the
    // database link, this process's broadcasts never reached another process again: adapter.servertest.ts).
    // So a checked-out client whose connection ended is released here, as broken (the pool drops it).
    const checkedOut = new Set<pg.PoolClient>();
    pool.on("acquire", (client) => checkedOut.add(client));
    pool.on("release", (_err, client) => checkedOut.delete(client));
    pool.on("remove", (client) => checkedOut.delete(client as pg.PoolClient));
    pool.on("connect", (client) => {
      client.on("error", (e) => log(`postgres adapter (listen): ${e.message}`));
      client.on("end", () => {
        // A query that ended with the connection releases its client itself, on a later tick: only what is
        // still checked out after that (the LISTEN client) is the adapter's leak.
        setTimeout(() => {
          if (!checkedOut.delete(client)) return;
          try {
            client.release(new Error("connection ended"));
          } catch {
            // Released meanwhile: nothing to do.
          }
        }, 0);
      });
    });
    io.adapter(createPostgresAdapter(pool, { errorHandler: (e) => log(`postgres adapter: ${e.message}`) }));
    return {
      kind: "postgres",
      describe: "socket.io across web processes: Postgres adapter (LISTEN/NOTIFY on DATABASE_URL)",
      close: () => pool.end(),
    };
  }
  return {
    kind: "none",
    describe: "socket.io: single process (embedded PGlite serves one process only; set DATABASE_URL to run several)",
    close: async () => {},
  };
}
