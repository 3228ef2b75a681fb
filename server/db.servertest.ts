// Migrations and the Prisma client on both databases Rollbook supports: a fresh Postgres database (created
// and dropped here; needs the Postgres at DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/postgres)
// and a fresh PGlite data directory.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { openDatabase, type DbHandle, type DbSettings } from "./db";
import {
  createPgDatabase,
  dropPgDatabase,
  migrationChecksum,
  migrationsDir,
  migrationStatus,
  schemaDrift,
  type MigrationTarget,
} from "./db-migrate";

const adminUrl = process.env.DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

async function localMigrations(): Promise<{ name: string; checksum: string }[]> {
  const names = (await readdir(migrationsDir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => ({
      name,
      checksum: migrationChecksum(await readFile(path.join(migrationsDir, name, "migration.sql"), "utf8")),
    })),
  );
}

type Setup = { settings: DbSettings; cleanup: () => Promise<void> };

const backends: [string, () => Promise<Setup>][] = [
  [
    "postgres",
    async () => {
      const name = `rollbook_test_${process.pid}_${Date.now()}`;
      const url = await createPgDatabase(adminUrl, name);
      return { settings: { kind: "postgres", url }, cleanup: () => dropPgDatabase(adminUrl, name) };
    },
  ],
  [
    "pglite",
    async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), "rollbook-db-test-"));
      return { settings: { kind: "pglite", dataDir }, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
    },
  ],
];

describe.each(backends)("database on %s", (_kind, setup) => {
  let env: Setup;
  let db: DbHandle;
  let target: MigrationTarget;

  beforeAll(async () => {
    env = await setup();
    db = await openDatabase(env.settings);
    target = db.pglite ? { kind: "pglite", pglite: db.pglite } : { kind: "postgres", url: (env.settings as { url: string }).url };
  });

  afterAll(async () => {
    await db?.close();
    await env?.cleanup();
  });

  it("applies every migration once, then nothing", async () => {
    const local = await localMigrations();
    expect(local.length).toBeGreaterThan(0);
    expect(await db.migrate()).toEqual(local.map((m) => m.name));
    expect(await db.migrate()).toEqual([]);

    const status = await migrationStatus(target);
    expect(status.upToDate).toBe(true);
    expect(status.pending).toEqual([]);
  });

  it("records names and checksums in _prisma_migrations as Prisma does", async () => {
    const rows = await db.prisma.$queryRawUnsafe<
      { migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null; applied_steps_count: number }[]
    >(
      `SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count
         FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    const local = await localMigrations();
    expect(rows.map((r) => ({ name: r.migration_name, checksum: r.checksum }))).toEqual(local);
    for (const row of rows) {
      expect(row.finished_at).not.toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(Number(row.applied_steps_count)).toBe(1);
    }
  });

  it("reports no drift between the schema and the migrated database", async () => {
    expect(await schemaDrift(target)).toBe("");
  });

  it("stores a run event once when it is delivered twice", async () => {
    const { prisma } = db;
    const ws = await prisma.workspace.create({ data: { slug: "ws", name: "Workspace" } });
    const exp = await prisma.experiment.create({ data: { workspaceId: ws.id, name: "exp" } });
    const version = await prisma.experimentVersion.create({
      data: { experimentId: exp.id, number: 1, files: { "config.json": "{}" }, filesHash: "h" },
    });
    const run = await prisma.run.create({
      data: {
        number: 1,
        workspaceId: ws.id,
        experimentId: exp.id,
        versionId: version.id,
        kind: "dry_run",
        config: {},
        baseModel: "m",
        seed: 1,
        codeHash: "c",
        tasksHash: "t",
        tags: ["a"],
      },
    });
    const event = { runId: run.id, seq: 1, type: "run_started", payload: { ok: true }, ts: new Date() };
    const first = await prisma.runEvent.createMany({ data: [event], skipDuplicates: true });
    const second = await prisma.runEvent.createMany({
      data: [event, { ...event, seq: 2, type: "step" }],
      skipDuplicates: true,
    });
    expect(first.count).toBe(1);
    expect(second.count).toBe(1);
    const events = await prisma.runEvent.findMany({ where: { runId: run.id }, orderBy: { seq: "asc" } });
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, "run_started"],
      [2, "step"],
    ]);
    expect(events[0]?.payload).toEqual({ ok: true });

    await prisma.checkpoint.create({ data: { runId: run.id, step: 1, path: "p", sizeBytes: 5n * 2n ** 32n } });
    expect((await prisma.checkpoint.findFirstOrThrow({ where: { runId: run.id } })).sizeBytes).toBe(5n * 2n ** 32n);

    // Deleting the workspace removes everything under it.
    await prisma.workspace.delete({ where: { id: ws.id } });
    expect(await prisma.runEvent.count()).toBe(0);
    expect(await prisma.run.count()).toBe(0);
  });
});
