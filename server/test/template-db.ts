/**
 * One migrated database per server-test run, copied for each test file. Migrating a fresh database runs every
 * migration through Prisma's WASM schema engine (seconds a file on a busy 2-core machine, ~50 files);
 * `CREATE DATABASE … TEMPLATE` copies the migrated one's files instead. The server project's globalSetup
 * (global-setup.ts) makes the template and names it in ROLLBOOK_TEST_TEMPLATE_DB, which the test processes
 * inherit; createTestDb (harness.ts) copies it when named and migrates a fresh database as before when not
 * (a bench, a script, a test run without the globalSetup).
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { openDatabase } from "../db";
import { createPgDatabase, dropPgDatabase, withDatabase } from "../db-migrate";

export const TEMPLATE_ENV = "ROLLBOOK_TEST_TEMPLATE_DB";

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A freshly migrated database to copy; drop() removes it (the copies are dropped by their own tests). */
export async function createTemplateDb(adminUrl: string): Promise<{ name: string; drop: () => Promise<void> }> {
  const name = `rollbook_template_${process.pid}_${randomUUID().slice(0, 8)}`;
  const handle = await openDatabase({ kind: "postgres", url: await createPgDatabase(adminUrl, name) });
  try {
    await handle.migrate();
  } finally {
    // Nobody may be connected to a template while it is copied.
    await handle.close();
  }
  return { name, drop: () => dropPgDatabase(adminUrl, name) };
}

/** A new database `name`, a copy of the migrated `template`; its connection string. */
export async function copyTemplateDb(adminUrl: string, template: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${quote(name)} TEMPLATE ${quote(template)}`);
  } finally {
    await client.end();
  }
  return withDatabase(adminUrl, name);
}
