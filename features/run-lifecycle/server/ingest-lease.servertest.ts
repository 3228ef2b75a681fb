/**
 * The ingest lease's SQL on both databases Rollbook runs on (Postgres, and the embedded PGlite): one holder
 * at a time, renewal, takeover only after expiry (in the database's clock), release, and the re-send point.
 *   npx vitest run --project server features/run-lifecycle/server/ingest-lease.servertest.ts
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type DbHandle } from "@/server/db";
import { createRunningRun, createTestDb, newWorkspace, type TestDb } from "@/server/test/harness";
import { IngestLeases } from "./ingest/lease";

let pgTest: TestDb;
let pglite: DbHandle;
let pgliteDir: string;

beforeAll(async () => {
  pgTest = await createTestDb();
  pgliteDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-lease-pglite-"));
  pglite = await openDatabase({ kind: "pglite", dataDir: pgliteDir });
  await pglite.migrate();
});

afterAll(async () => {
  await pgTest?.drop();
  await pglite?.close();
  if (pgliteDir) fs.rmSync(pgliteDir, { recursive: true, force: true });
});

describe.each([
  ["Postgres", () => pgTest.handle.prisma],
  ["PGlite", () => pglite.prisma],
])("ingest lease on %s", (_name, db) => {
  it("one holder at a time; renewed by its holder only; taken over once expired; released at once", async () => {
    const ws = await newWorkspace(db());
    const [a, b] = [await createRunningRun(db(), ws), await createRunningRun(db(), ws)];
    await db().run.update({ where: { id: a }, data: { lastSeq: 7 } });
    // A long TTL: expiry is made by moving expiresAt into the past, never by waiting (no timing under load).
    const one = new IngestLeases(db(), "web-1", 60_000);
    const two = new IngestLeases(db(), "web-2", 60_000);
    const expire = (runId: string) => db().$executeRaw`UPDATE "IngestLease" SET "expiresAt" = now() - interval '1 millisecond' WHERE "runId" = ${runId}`;
    const expiresAt = async (runId: string) => (await db().ingestLease.findUniqueOrThrow({ where: { runId } })).expiresAt.getTime();

    // A new lease starts at the run's stored lastSeq (nothing to re-send).
    expect(await one.take([a, b])).toEqual(expect.arrayContaining([{ runId: a, emittedSeq: 7 }, { runId: b, emittedSeq: 0 }]));
    expect(await two.take([a, b])).toEqual([]); // held
    expect(await one.take([a])).toEqual([{ runId: a, emittedSeq: 7 }]); // its own: re-taken

    // Renewal records what was emitted and pushes expiry out, from an expired state too (its own lease).
    await expire(a);
    const before = await expiresAt(a);
    expect(await one.renew(new Map([[a, 9], [b, 3]]))).toEqual(new Set([a, b]));
    expect(await expiresAt(a)).toBeGreaterThan(before + 50_000);
    expect(await two.take([a])).toEqual([]); // renewed: held again

    // b expires (its holder died): the other process takes it, from what the dead holder had emitted.
    await expire(b);
    expect(await two.take([a, b])).toEqual([{ runId: b, emittedSeq: 3 }]);
    // The old holder finds out at its next renewal: b is no longer its to follow.
    expect(await one.renew(new Map([[a, 12], [b, 5]]))).toEqual(new Set([a]));
    expect(await db().ingestLease.findUniqueOrThrow({ where: { runId: b } })).toMatchObject({ holder: "web-2", emittedSeq: 3 });

    // Released (a graceful shutdown): another process takes it at once, from what was emitted.
    await one.release(new Map([[a, 15]]));
    expect(await two.take([a])).toEqual([{ runId: a, emittedSeq: 15 }]);
    // Releasing what someone else holds changes nothing.
    await one.release(new Map([[a, 99]]));
    expect(await db().ingestLease.findUniqueOrThrow({ where: { runId: a } })).toMatchObject({ holder: "web-2", emittedSeq: 15 });

    // Ended runs' expired leases are pruned; active ones are kept.
    await db().run.update({ where: { id: a }, data: { status: "completed" } });
    await two.release(new Map([[a, 15], [b, 3]]));
    expect(await two.prune()).toBe(1);
    expect((await db().ingestLease.findMany({ where: { runId: { in: [a, b] } } })).map((l) => l.runId)).toEqual([b]);
  });
});
