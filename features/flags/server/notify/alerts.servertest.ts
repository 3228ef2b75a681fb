/**
 * A run's end alert names the last step that finished, the number the run page's Steps shows: a run stopped
 * while step 3's rollouts ran (Run.currentStep 3) after steps 1 and 2 finished said "stopped at step 3"
 * (issue 31); it says "after step 2 of 12".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRunningRun, createTestDb, newWorkspace, type TestDb } from "@/server/test/harness";
import { alertRunEnded } from "./alerts";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
}, 120_000);
afterAll(async () => {
  await tdb?.drop();
});

describe("the alert of a run that ended", () => {
  it("says the last finished step of a stopped train run, not the step in progress", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    await db().step.createMany({ data: [1, 2].map((step) => ({ runId, step, metrics: {} })) });
    await db().run.update({ where: { id: runId }, data: { status: "stopped", currentStep: 3 } });
    const alert = await alertRunEnded(db(), runId);
    expect(alert?.message).toMatch(/: stopped after step 2 of 12\.$/);
  });

  it("says no step finished when the first had not", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: runId }, data: { status: "stopped", currentStep: 1 } });
    expect((await alertRunEnded(db(), runId))?.message).toMatch(/: stopped before step 1 of 12 finished\.$/);
  });
});
