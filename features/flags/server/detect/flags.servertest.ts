/**
 * Pathology flags on real Postgres through real ingestion: the default template's failure (every rollout
 * the same long sentence scoring 0.200, zero-variance groups from step 7) is flagged by step 8, linked to
 * those rollouts, alerted once, and re-ingesting changes nothing; a quiet running run is flagged stalled.
 *   npx vitest run --project server features/flags/server/detect/pathology.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEvent, type Trajectory } from "@contracts";
import { ingestAndEmit as ingestOnly } from "@/features/run-lifecycle/server";
import { postIngestSettled } from "./after-ingest";
import { storeFlag } from "./store";
import { flagStalledRuns } from "../notify/watcher";
import { callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, type TestDb } from "@/server/test/harness";

let tdb: TestDb;

/** Ingest, then wait for the flags and alerts the batch scheduled. */
async function ingestAndEmit(...args: Parameters<typeof ingestOnly>) {
  const res = await ingestOnly(...args);
  await postIngestSettled(args[1]);
  return res;
}
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
}, 120_000);
afterAll(async () => {
  await tdb?.drop();
});

const GROUPS = 4;
const PER_GROUP = 4;

function rollout(step: number, g: number, i: number, collapsed: boolean): Trajectory {
  const reply = collapsed ? "The word you asked me to say is tunnel, here it is." : ["tunnel", "A tunnel.", "The word is tunnel.", "no"][(g + i) % 4]!;
  const words = reply.split(/\W+/).filter(Boolean).length;
  const reward = collapsed ? 0.2 : reply === "no" ? 0 : 1 / words;
  return {
    id: `t${step}-${g}-${i}`,
    step,
    group: g,
    task_index: g,
    split: "train",
    task: { word: "tunnel" },
    messages: [{ role: "user", content: "say tunnel" }, { role: "assistant", content: reply }],
    reward,
    metrics: { exact: reward === 1 ? 1 : 0, contains: reward > 0 ? 1 : 0, words },
    error: null,
    model: "SmolLM2-135M-Instruct",
    tokens: { prompt: 20, completion: collapsed ? 24 : 3 + words },
    timings: { started_at: 1_700_000_000_000, duration_ms: 10, model_ms: 8 },
    logs: [],
  };
}

/** One step's events: its rollouts, then step.finished, as the runner emits them. */
function stepEvents(runId: string, step: number, collapsed: boolean, seq0: number): RunEvent[] {
  const evs: { type: RunEvent["type"]; payload: unknown }[] = [];
  for (let g = 0; g < GROUPS; g++) for (let i = 0; i < PER_GROUP; i++) evs.push({ type: "rollout.finished", payload: rollout(step, g, i, collapsed) });
  evs.push({
    type: "step.finished",
    payload: {
      step,
      reward_mean: collapsed ? 0.2 : 0.4,
      reward_std_within_group: collapsed ? 0 : 0.3,
      exception_rate: 0,
      groups_trainable: collapsed ? 0 : GROUPS,
      rollouts: GROUPS * PER_GROUP,
      rollout_s: 1,
      train_s: 1,
      step_s: 2,
      tokens_per_s: 10,
      trainer: {
        loss: collapsed ? 0 : 0.1, grad_norm: collapsed ? 0 : 1, kl: collapsed ? 0 : 0.001, clip_fraction: 0, entropy: 1,
        probs_corr: collapsed ? 0 : 1, trained_tokens: collapsed ? 0 : 100, groups_submitted: GROUPS,
        groups_trainable: collapsed ? 0 : GROUPS, skipped: collapsed, duration_s: 1,
      },
    },
  });
  return evs.map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: seq0 + i, ts: 1_700_000_000_000 + seq0 + i }));
}

describe("pathology flags through ingestion", () => {
  it("flags the default template's collapse (zero-variance groups from step 7) by step 8, once", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    let seq = 1;
    const batches: RunEvent[][] = [];
    for (let step = 0; step <= 9; step++) {
      const evs = stepEvents(runId, step, step >= 7, seq);
      seq += evs.length;
      batches.push(evs);
      await ingestAndEmit(db(), runId, evs);
      const flags = await db().runFlag.findMany({ where: { runId }, orderBy: { rule: "asc" } });
      const collapse = flags.find((f) => f.rule === "reward_collapse");
      // Healthy steps raise nothing.
      if (step <= 6) expect(flags, `after step ${step}`).toEqual([]);
      // The collapse's first step: the replies grew to long sentences (length drift), but one all-tied
      // step can be chance, so no collapse yet…
      if (step === 7) expect(flags.map((f) => [f.rule, f.firstStep])).toEqual([["length_drift", 7]]);
      // …its second step raises it: within 2 steps of the collapse starting.
      if (step === 8) {
        expect([collapse?.severity, collapse?.firstStep, collapse?.lastStep]).toEqual(["critical", 7, 8]);
        expect(collapse!.message).toContain("0.200");
        expect(collapse!.rolloutIds.length).toBe(2 * GROUPS * PER_GROUP);
        expect(collapse!.rolloutIds.every((id) => /^t[78]-/.test(id))).toBe(true);
      }
    }
    // Step 9 extended the same two flags instead of raising more.
    const flags = await db().runFlag.findMany({ where: { runId }, orderBy: { rule: "asc" } });
    expect(flags.map((f) => [f.rule, f.firstStep, f.lastStep, f.steps])).toEqual([
      ["length_drift", 7, 9, [7, 8, 9]],
      ["reward_collapse", 7, 9, [7, 8, 9]],
    ]);

    // The flag is visible to a viewer, and alerted once.
    const viewer = callerFor(db(), ws);
    const listed = await viewer.flags.runFlags({ runId });
    expect(listed.map((f) => f.rule)).toEqual(["length_drift", "reward_collapse"]);
    const alerts = await viewer.flags.list();
    expect(alerts.items.map((a) => a.title)).toEqual([expect.stringMatching(/reward collapse/), expect.stringMatching(/length drift/)]);
    expect(alerts.unread).toBe(2);
    await viewer.flags.markRead();
    expect((await viewer.flags.list()).unread).toBe(0);

    // Re-delivering every batch changes nothing.
    for (const b of batches) await ingestAndEmit(db(), runId, b);
    expect(await db().runFlag.count({ where: { runId } })).toBe(2);
    expect(await db().alert.count({ where: { runId } })).toBe(2);

    // The run finishing raises its own alert.
    await ingestAndEmit(db(), runId, [RunEvent.parse({ type: "run.finished", run_id: runId, seq, ts: 1_700_000_100_000, payload: { status: "completed", error: null, diagnostics: [] } })]);
    const kinds = (await viewer.flags.list()).items.map((a) => a.kind);
    expect(kinds).toEqual(["run.completed", "run.flag", "run.flag"]);
  });

  it("a healthy run raises no flag", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    let seq = 1;
    for (let step = 0; step < 6; step++) {
      const evs = stepEvents(runId, step, false, seq);
      seq += evs.length;
      await ingestAndEmit(db(), runId, evs);
    }
    expect(await db().runFlag.findMany({ where: { runId } })).toEqual([]);
  });

  it("an info flag (converged) is shown on the run but alerts nobody and does not make the run 'flagged'", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const info = { rule: "converged" as const, severity: "info" as const, message: "Converged on steps 4–5", firstStep: 4, lastStep: 5, steps: [4, 5], rolloutIds: [] };
    await storeFlag(db(), runId, info, []);
    expect((await db().runFlag.findMany({ where: { runId } })).map((f) => [f.rule, f.severity])).toEqual([["converged", "info"]]);
    expect(await db().alert.count({ where: { workspaceId: ws } })).toBe(0);
    const flagged = await callerFor(db(), ws).runs.list({ flagged: true });
    expect(flagged.items.map((r) => r.id)).not.toContain(runId);
    // The same flag turning into a problem (length with the reward, then against it) is alerted then.
    await storeFlag(db(), runId, { ...info, rule: "converged", severity: "warning", lastStep: 6, steps: [4, 5, 6] }, await db().runFlag.findMany({ where: { runId } }));
    expect(await db().alert.count({ where: { workspaceId: ws } })).toBe(1);
    expect((await callerFor(db(), ws).runs.list({ flagged: true })).items.map((r) => r.id)).toContain(runId);
  });

  it("a dry run is flagged on its page but alerts nobody", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    await db().run.update({ where: { id: runId }, data: { kind: "dry_run" } });
    // runEvents: a quarter of step 0's rollouts fail.
    await ingestAndEmit(db(), runId, runEvents(runId));
    expect((await db().runFlag.findMany({ where: { runId } })).map((f) => f.rule)).toEqual(["exception_rate"]);
    expect(await db().alert.count({ where: { workspaceId: ws } })).toBe(0);
  });

  it("a running run with no event for STALL_AFTER_MS is flagged stalled and alerted, once", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const quiet = await createRunningRun(db(), ws);
    const now = new Date();
    await db().run.update({ where: { id: runId }, data: { lastHeartbeatAt: new Date(now.getTime() - 10 * 60_000), currentStep: 3 } });
    await db().run.update({ where: { id: quiet }, data: { lastHeartbeatAt: new Date(now.getTime() - 60_000) } });
    expect(await flagStalledRuns(db(), 5 * 60_000, now)).toEqual([runId]);
    expect(await flagStalledRuns(db(), 5 * 60_000, now)).toEqual([]);
    const flags = await db().runFlag.findMany({ where: { runId } });
    expect(flags.map((f) => [f.rule, f.firstStep])).toEqual([["stalled", 3]]);
    expect(flags[0]!.message).toMatch(/No event from the run for 10 min/);
    const alerts = await db().alert.findMany({ where: { workspaceId: ws } });
    expect(alerts.map((a) => a.kind)).toEqual(["run.stalled"]);
    // The runs table's flagged filter and flag column.
    const table = await callerFor(db(), ws).runs.list({ flagged: true });
    expect(table.items.map((r) => [r.id, r.flags.map((f) => f.rule)])).toEqual([[runId, ["stalled"]]]);
    expect((await callerFor(db(), ws).runs.list({})).items).toHaveLength(2);
  });
});
