/**
 * A runner's notices (a GPU sampling without vLLM) as the Runners page gets them: recorded from its answer,
 * listed to every member of a workspace that may use it, replaced by its next answer.
 *   TEST_DATABASE_URL=… npx vitest run --project server features/runners/server/runner-notices.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunnerStatus } from "@contracts";
import { SLOW_SAMPLING, SLOW_SAMPLING_MESSAGE } from "@/gpu-runner/src/engine/backend-notice";
import { registerRunner } from "@/server/runner-client";
import { callerAs, createTestDb, newWorkspace, type TestDb } from "@/server/test/harness";
import { recordRunnerAnswer } from "./runner-pool";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

const answer = (notices?: RunnerStatus["notices"]): RunnerStatus => ({
  runner: "gpu-1",
  engine: { state: "ready", restarts: 0, health: null },
  runs: [],
  device: "cuda:0: NVIDIA H200",
  disk_error: null,
  ...(notices ? { notices } : {}),
});

describe("a runner's notices on the Runners page", () => {
  it("are listed, as the runner said them, to every member; its next answer replaces them", async () => {
    const ws = await newWorkspace(db());
    const row = await registerRunner(db(), { name: `gpu-${ws}`, url: "http://gpu-box:4100", token: "a-token-of-the-runner", workspaceId: ws });
    const notice = { kind: SLOW_SAMPLING, message: SLOW_SAMPLING_MESSAGE };
    expect(await recordRunnerAnswer(db(), row.id, answer([notice]))).toBe("healthy");

    for (const role of ["owner", "admin", "member", "viewer"] as const) {
      const api = await callerAs(db(), ws, { role });
      const listed = (await api.runners.list()).find((r) => r.id === row.id);
      expect(listed?.notices, role).toEqual([notice]);
    }

    // The operator installed vLLM: the runner says nothing more, and the page shows nothing more.
    await recordRunnerAnswer(db(), row.id, answer([]));
    const owner = await callerAs(db(), ws, { role: "owner" });
    expect((await owner.runners.list()).find((r) => r.id === row.id)?.notices).toEqual([]);

    // An older runner (no notices field) has none to show; a column holding anything else reads as none.
    await recordRunnerAnswer(db(), row.id, answer([notice]));
    await recordRunnerAnswer(db(), row.id, answer());
    expect((await owner.runners.list()).find((r) => r.id === row.id)?.notices).toEqual([]);
    await db().runner.update({ where: { id: row.id }, data: { notices: [{ kind: 3 }] } });
    expect((await owner.runners.list()).find((r) => r.id === row.id)?.notices).toEqual([]);
  });

  it("another workspace does not see them", async () => {
    const ws = await newWorkspace(db());
    const other = await newWorkspace(db());
    const row = await registerRunner(db(), { name: `gpu-${ws}`, url: "http://gpu-box:4100", token: "a-token-of-the-runner", workspaceId: ws });
    await recordRunnerAnswer(db(), row.id, answer([{ kind: SLOW_SAMPLING, message: SLOW_SAMPLING_MESSAGE }]));
    const api = await callerAs(db(), other, { role: "owner" });
    expect((await api.runners.list()).find((r) => r.id === row.id)).toBeUndefined();
  });
});
