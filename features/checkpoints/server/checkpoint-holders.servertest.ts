/**
 * A checkpoint an active run reads is deleted after that run ends, not under it (issue 32, item 1), on a real
 * Postgres: an eval of it, a fork that has not trained its first step, a judge naming it by run number — each
 * defers the deletion (marked, row kept, nothing asked of a runner); a finished run, another workspace's run and
 * a fork past its first step do not hold it; once the holder stops, it no longer does.
 *   npx vitest run --project server features/checkpoints/server/checkpoint-holders.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunConfig } from "@contracts";
import { stopRun } from "@/features/run-lifecycle/server";
import { createRunningRun, createTestDb, newWorkspace, type TestDb } from "@/server/test/harness";
import { checkpointHolders } from "./checkpoint-holders";
import { deleteCheckpoints } from "./checkpoint-delete";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

describe("deleting a checkpoint an active run reads (real Postgres)", () => {
  let ws: string;
  let parent: { id: string; number: number; workspaceId: string };
  let evalRun: string;

  beforeAll(async () => {
    tdb = await createTestDb();
    ws = await newWorkspace(db());
    const id = await createRunningRun(db(), ws);
    parent = await db().run.findUniqueOrThrow({ where: { id }, select: { id: true, number: true, workspaceId: true } });
    for (const step of [1, 2, 3, 4, 5]) await db().checkpoint.create({ data: { runId: id, step, path: `runs/${id}/checkpoints/${step}`, sizeBytes: 1 } });
    evalRun = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: evalRun }, data: { kind: "eval", evalModel: `${id}@1` } });
    const fork = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: fork }, data: { initFrom: { run_id: id, step: 2, load_optimizer: false } } });
    const judged = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: judged }, data: { config: { ...(RunConfig.parse({}) as object), judge: { model: `${parent.number}@3` } } } });
    // Not holders: a fork past its first step, a finished eval, another workspace's eval of the same name.
    const trained = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: trained }, data: { initFrom: { run_id: id, step: 4, load_optimizer: false }, currentStep: 2 } });
    const done = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: done }, data: { kind: "eval", evalModel: `${id}@4`, status: "completed" } });
    const other = await createRunningRun(db(), await newWorkspace(db()));
    await db().run.update({ where: { id: other }, data: { kind: "eval", evalModel: `${id}@4` } });
  }, 120_000);

  afterAll(async () => {
    await tdb?.drop();
  });

  it("names who holds each step, in this workspace only", async () => {
    expect((await checkpointHolders(db(), parent, 1)).map((h) => h.why)).toEqual(["evaluates it"]);
    expect((await checkpointHolders(db(), parent, 2)).map((h) => h.why)).toEqual(["starts from it"]);
    expect((await checkpointHolders(db(), parent, 3)).map((h) => h.why)).toEqual(["samples or judges with it"]);
    expect(await checkpointHolders(db(), parent, 4)).toEqual([]);
  });

  it("defers the held steps (marked, kept, no runner asked) and says who holds them; a step nobody reads needs the runner", async () => {
    const out = await deleteCheckpoints(db(), parent.id, [1, 2, 3]);
    expect(out).toMatchObject({ ok: true, deleted_count: 0, not_found_steps: [] });
    if (!out.ok) throw new Error(out.message);
    expect(out.deferred_steps.map((d) => d.step)).toEqual([1, 2, 3]);
    expect(out.deferred_steps[0]!.held_by).toMatch(/^run #\d+ \(evaluates it\)$/);
    const rows = await db().checkpoint.findMany({ where: { runId: parent.id }, orderBy: { step: "asc" }, select: { step: true, deleteRequestedAt: true } });
    expect(rows.map((r) => [r.step, r.deleteRequestedAt !== null])).toEqual([[1, true], [2, true], [3, true], [4, false], [5, false]]);
    // Step 4 is read by nobody active here: it is deleted now, which needs the runner this run lacks.
    expect(await deleteCheckpoints(db(), parent.id, [4])).toMatchObject({ ok: false, reason: "runner" });
    expect(await db().checkpoint.count({ where: { runId: parent.id } })).toBe(5);
  });

  it("once the eval stops, it no longer holds its checkpoint", async () => {
    expect(await stopRun(db(), evalRun, { runnerMayRun: false })).toBe(true);
    expect(await checkpointHolders(db(), parent, 1)).toEqual([]);
  });
});
