// The web server's one Prisma client module.
//
//   DATABASE_URL set   → PrismaClient over @prisma/adapter-pg (Postgres).
//   DATABASE_URL unset → PrismaClient over the embedded PGlite database in ${DATA_DIR:-.data}/pglite
//                        (pglite-prisma-adapter). PGlite is single-process: one process per data directory,
//                        so stop the server before running `npm run db:migrate` on the embedded database.
//
// getDb() is a lazy singleton kept on globalThis, so Next's route bundles and the custom server (which are
// bundled apart) share one client and, with PGlite, one open database. Call migrateDatabase() once at server
// start, before serving: it applies pending prisma/migrations (the same code as scripts/db.ts deploy).
import type { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaPGlite } from "pglite-prisma-adapter";

import { PrismaClient } from "../generated/prisma/client";
import type { MigrationTarget } from "./db-migrate";
import { openPglite, pgliteDataDir } from "./db-pglite";
import { env } from "./env";

export type { PrismaClient };

/** Which database to use. */
export type DbSettings = { kind: "postgres"; url: string } | { kind: "pglite"; dataDir: string };

/** The database settings from the validated environment (server/env.ts): DATABASE_URL, DATA_DIR. */
export function dbSettings(): DbSettings {
  const e = env();
  return e.DATABASE_URL ? { kind: "postgres", url: e.DATABASE_URL } : { kind: "pglite", dataDir: e.DATA_DIR };
}

/** A one-line description for logs (no password). */
export function describeDb(settings: DbSettings = dbSettings()): string {
  return settings.kind === "postgres"
    ? `Postgres ${settings.url.replace(/\/\/[^@/]*@/, "//***@")}`
    : `PGlite ${pgliteDataDir(settings.dataDir)}`;
}

/** An open database: its Prisma client, a way to migrate it, and a way to close it. */
export type DbHandle = {
  prisma: PrismaClient;
  settings: DbSettings;
  /** The embedded database, when settings.kind is "pglite". */
  pglite?: PGlite;
  /** Applies pending migrations; returns the names applied now (empty when up to date). */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
};

/** Loaded on demand, so route bundles that only query never load the WASM schema engine. */
async function deploy(target: MigrationTarget): Promise<string[]> {
  const { deployMigrations } = await import("./db-migrate");
  return deployMigrations(target);
}

/** Opens a database without touching the process-wide singleton (tests, scripts). */
export async function openDatabase(settings: DbSettings): Promise<DbHandle> {
  if (settings.kind === "postgres") {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: settings.url }) });
    const target: MigrationTarget = { kind: "postgres", url: settings.url };
    return {
      prisma,
      settings,
      migrate: () => deploy(target),
      close: () => prisma.$disconnect(),
    };
  }
  const pglite = await openPglite(settings.dataDir);
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  const target: MigrationTarget = { kind: "pglite", pglite };
  return {
    prisma,
    settings,
    pglite,
    migrate: () => deploy(target),
    close: async () => {
      await prisma.$disconnect();
      if (!pglite.closed) await pglite.close();
    },
  };
}

type DbGlobal = { __rollbookDb?: Promise<DbHandle> };
const holder = globalThis as DbGlobal;

function handle(): Promise<DbHandle> {
  if (!holder.__rollbookDb) {
    const opening = openDatabase(dbSettings());
    holder.__rollbookDb = opening;
    // A failed open must not stick: the next call tries again.
    opening.catch(() => {
      if (holder.__rollbookDb === opening) holder.__rollbookDb = undefined;
    });
  }
  return holder.__rollbookDb;
}

/** The process's Prisma client (opened on first use, from DATABASE_URL / DATA_DIR). */
export async function getDb(): Promise<PrismaClient> {
  return (await handle()).prisma;
}

/** Applies pending migrations to the process's database. Call once at server start. */
export async function migrateDatabase(): Promise<string[]> {
  return (await handle()).migrate();
}

/** Disconnects and, for PGlite, closes the data directory; a later getDb() opens it again. */
export async function closeDb(): Promise<void> {
  const opening = holder.__rollbookDb;
  holder.__rollbookDb = undefined;
  if (!opening) return;
  const db = await opening.catch(() => undefined);
  await db?.close();
}
