// Rollbook's offline migration CLI (Prisma's WASM schema engine; see server/db-migrate.ts).
//
//   node --import tsx scripts/db.ts create <name> [--create-only]   new prisma/migrations/<ts>_<name>/
//   node --import tsx scripts/db.ts deploy                          apply pending migrations
//   node --import tsx scripts/db.ts status                          applied / pending / edited / failed
//   node --import tsx scripts/db.ts diff                            schema vs database; exit 2 on drift
//
// Database: DATABASE_URL when set (Postgres), else the embedded PGlite under ${DATA_DIR:-.data}/pglite
// (stop the server first: one process per PGlite data directory). `create` also applies the new migration
// to that development database, like `prisma migrate dev` (pass --create-only not to).
import type { PGlite } from "@electric-sql/pglite";

import {
  createMigration,
  deployMigrations,
  migrationStatus,
  openPglite,
  pgliteDataDir,
  schemaDrift,
  type MigrationTarget,
} from "../server/db-migrate";
import { env } from "../server/env";

const USAGE = "usage: scripts/db.ts create <name> [--create-only] | deploy | status | diff";

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  const args = rest.filter((a) => !a.startsWith("--"));
  const flags = new Set(rest.filter((a) => a.startsWith("--")));
  if (!cmd || !["create", "deploy", "status", "diff"].includes(cmd)) {
    console.error(USAGE);
    return 64;
  }

  // The same settings as the server (server/env.ts): DATABASE_URL, else PGlite under DATA_DIR.
  const url = env().DATABASE_URL;
  const dataDir = env().DATA_DIR;
  let pglite: PGlite | undefined;
  let target: MigrationTarget;
  if (url) {
    target = { kind: "postgres", url };
    console.error(`database: ${url.replace(/\/\/[^@/]*@/, "//***@")}`);
  } else {
    pglite = await openPglite(dataDir);
    target = { kind: "pglite", pglite };
    console.error(`database: PGlite at ${pgliteDataDir(dataDir)}`);
  }

  const t0 = performance.now();
  try {
    switch (cmd) {
      case "create": {
        const name = args[0];
        if (!name) {
          console.error(USAGE);
          return 64;
        }
        const created = await createMigration(target, name, { apply: !flags.has("--create-only") });
        if (!created) {
          console.log("No schema changes: no migration created.");
        } else {
          console.log(`Created prisma/migrations/${created.name}/migration.sql`);
          if (!flags.has("--create-only")) console.log(`Applied ${created.name}`);
        }
        return 0;
      }
      case "deploy": {
        const applied = await deployMigrations(target);
        console.log(applied.length ? `Applied: ${applied.join(", ")}` : "No pending migrations.");
        return 0;
      }
      case "status": {
        const s = await migrationStatus(target);
        console.log(`${s.local.length} migration(s) in prisma/migrations`);
        if (!s.hasMigrationsTable) console.log("The database has no _prisma_migrations table yet.");
        for (const n of s.pending) console.log(`pending:  ${n}`);
        for (const n of s.unknownToFolder) console.log(`applied but missing here: ${n}`);
        for (const n of s.failed) console.log(`failed:   ${n}`);
        for (const n of s.edited) console.log(`edited after being applied: ${n}`);
        console.log(s.upToDate ? "Database schema is up to date." : "Database is not up to date.");
        return s.upToDate ? 0 : 1;
      }
      case "diff": {
        const sql = await schemaDrift(target);
        if (!sql) {
          console.log("No drift: the database matches prisma/schema.prisma.");
          return 0;
        }
        console.log("-- Drift: SQL that would take the database to prisma/schema.prisma:");
        console.log(sql);
        return 2;
      }
    }
    return 64;
  } finally {
    console.error(`(${cmd}: ${Math.round(performance.now() - t0)} ms)`);
    await pglite?.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
