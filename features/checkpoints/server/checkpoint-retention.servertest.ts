/**
 * The best checkpoint and checkpoints.keep_last on real parts: the REAL runner with the REAL engine
 * (SmolLM2-135M on CPU), a 4-step train run of say-the-word with an eval after every step and
 * `checkpoints: { keep_last: 1, keep_best: true }`, its events ingested into a fresh Postgres AS THEY ARRIVE
 * (ingestAndEmit, as the web's follower does), so retention deletes while the run trains on. Checked:
 *   - exactly the newest and the best-validated checkpoint remain, on the runner's disk and in the DB
 *   - `<run>@best` serves that checkpoint through /api/v1/chat/completions and is listed by /api/v1/models,
 *     for this workspace only; hostile spellings are no alias
 *   - the checkpoints export names the best; the newest is never deleted, by the web or the runner
 *   npx vitest run --project server features/checkpoints/server/checkpoint-retention.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointModelName, EvalMetrics, type RunEvent } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { completeSteps } from "@/gpu-runner/src/loop/shared-checkpoints";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { handleChatCompletions, handleModels } from "@/features/openai-api/server";
import { ingestAndEmit, stopRun } from "@/features/run-lifecycle/server";
import { postIngestSettled } from "@/features/flags/server";
import { createApiToken, ensureDefaultExperiment } from "@/features/workspace/server";
import { registerRunner } from "@/server/runner-client";
import { callerAs, callerFor, createRunningRun, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "@/server/test/harness";
import { collectRunEvents } from "@/server/test/collect-run-events";
import { pickBest } from "./best-checkpoint";
import { checkpointRetentionSettled } from "./checkpoint-retention";
import { deleteCheckpoints } from "./checkpoint-delete";
import { checkpointsExport } from "./checkpoints-export";

const TOKEN = "retention-servertest-token-0123456789";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`checkpoint-retention.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);
const STEPS = 4;

let tdb: TestDb;
let testRunner: TestRunner | undefined;
const db = () => tdb.handle.prisma;

describe.skipIf(!engineAvailable)("best checkpoint and keep_last (real runner, real engine, a 4-step run)", () => {
  let ws: string;
  let runId: string;
  let runNumber: number;
  let tokenA: string;
  let tokenB: string;
  let events: RunEvent[];
  let expectedBest: { step: number; reward: number };

  beforeAll(async () => {
    tdb = await createTestDb();
    testRunner = await startTestRunner({ name: "retention-servertest", token: TOKEN, engine: "shared" });
    ws = await newWorkspace(db());
    const other = await newWorkspace(db());
    const runnerName = `retention-${ws}`;
    await registerRunner(db(), { name: runnerName, url: testRunner.server.url, token: TOKEN });
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const files = templateFiles({
      num_steps: STEPS,
      groups_per_step: 2,
      rollouts_per_group: 2,
      eval_every: 1,
      sampling: { temperature: 1.0, max_tokens: 8 },
      checkpoints: { keep_last: 1, keep_best: true },
    });
    const started = await callerFor(db(), ws, runnerName).runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    runId = started.runId;
    // Each event into the DB as it arrives, in order: retention runs mid-run, as behind the web's follower.
    let chain = Promise.resolve();
    let ingestError: unknown = null;
    events = await collectRunEvents(testRunner.server.url, TOKEN, runId, 560_000, (e) => {
      chain = chain.then(() => ingestAndEmit(db(), runId, [e]).then(() => undefined)).catch((err: unknown) => void (ingestError ??= err));
    });
    await chain;
    if (ingestError) throw ingestError;
    await checkpointRetentionSettled(runId);
    await postIngestSettled(runId);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    runNumber = (await db().run.findUniqueOrThrow({ where: { id: runId }, select: { number: true } })).number;

    // The best from the run's own log: the eval of checkpoint s is the eval.finished of model `<run>@s`.
    const rewards = new Map<number, number | null>();
    for (const e of events) if (e.type === "eval.finished" && e.payload.model === checkpointModelName(runId, e.payload.step)) rewards.set(e.payload.step, EvalMetrics.parse(e.payload).reward_mean);
    expect([...rewards.keys()].sort()).toEqual([1, 2, 3, 4]);
    expectedBest = pickBest(rewards, [1, 2, 3, 4])!;
    expect(expectedBest).not.toBeNull();

    tokenA = (await createApiToken(db(), { userId: (await userWithRole(db(), ws, "owner")).id, workspaceId: ws, name: "sdk" })).token;
    tokenB = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "other" })).token;
  }, 600_000);

  afterAll(async () => {
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("keeps exactly the newest and the best-validated checkpoint, on the runner's disk and in the DB", async () => {
    const saved = events.filter((e) => e.type === "checkpoint.saved").map((e) => e.payload.step);
    expect(saved).toEqual([1, 2, 3, 4]);
    const expected = [...new Set([expectedBest.step, STEPS])].sort((a, b) => a - b);
    const rows = await db().checkpoint.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(rows.map((r) => r.step)).toEqual(expected);
    expect(await completeSteps(testRunner!.runsDir, runId)).toEqual(expected);
    // Nothing half-deleted left beside them.
    expect(fs.readdirSync(path.join(testRunner!.runsDir, runId, "checkpoints")).sort()).toEqual(expected.map((s) => String(s).padStart(4, "0")));

    const list = await (await callerAs(db(), ws, { role: "viewer" })).checkpoints.list({ runId });
    expect(list.best).toEqual({ step: expectedBest.step, reward: expectedBest.reward, model: `${runNumber}@best` });
    const exported = await checkpointsExport(db(), ws, runId);
    expect(exported.best).toEqual({ step: expectedBest.step, validation_reward: expectedBest.reward, model: `${runNumber}@${expectedBest.step}`, alias: `${runNumber}@best` });
    expect(exported.checkpoints.filter((c) => c.best).map((c) => c.step)).toEqual([expectedBest.step]);
  });

  it("never deletes the newest checkpoint: the web's deleteCheckpoints and the runner both refuse it", async () => {
    const out = await deleteCheckpoints(db(), runId, [STEPS]);
    expect(out).toMatchObject({ ok: false, message: expect.stringContaining("newest checkpoint") });
    const atRunner = (p: string) => fetch(`${testRunner!.server.url}${p}`, { method: "DELETE", headers: { authorization: `Bearer ${TOKEN}` } });
    expect((await atRunner(`/runs/${runId}/checkpoints/${STEPS}`)).status).toBe(409);
    for (const p of [`/runs/..%2F${runId}/checkpoints/1`, `/runs/${runId}/checkpoints/..%2F0001`, `/runs/${runId}/checkpoints/01`, `/runs/${runId}/checkpoints/-1`]) {
      expect((await atRunner(p)).status, p).toBe(400);
    }
    const noToken = await fetch(`${testRunner!.server.url}/runs/${runId}/checkpoints/1`, { method: "DELETE" });
    expect(noToken.status).toBe(401);
    expect(await completeSteps(testRunner!.runsDir, runId)).toContain(STEPS);
  });

  it("serves <run>@best (by number and by id) as the best checkpoint, for this workspace only", async () => {
    const chat = (model: string, token: string) =>
      handleChatCompletions(
        new Request("http://127.0.0.1/api/v1/chat/completions", {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ model, messages: [{ role: "user", content: "Say the word apple." }], max_tokens: 6, temperature: 0 }),
        }),
        { db: db() },
      );
    const text = async (res: Response) => ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    const viaAlias = await chat(`${runNumber}@best`, tokenA);
    expect(viaAlias.status).toBe(200);
    const aliasText = await text(viaAlias);
    // Greedy: the alias answers exactly what the best step's own name answers.
    expect(aliasText).toBe(await text(await chat(`${runNumber}@${expectedBest.step}`, tokenA)));
    expect((await chat(`${runId}@best`, tokenA)).status).toBe(200);

    for (const model of [`${runNumber}@best`, `${runId}@best`]) {
      const res = await chat(model, tokenB);
      expect(res.status, model).toBe(404);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("not found in this workspace");
    }
    for (const model of [`${runNumber}@BEST`, `${runNumber}@best2`, `${runNumber}@best\n`, `${runNumber}@@best`, `${runNumber}@1@best`, ` ${runNumber}@best`]) {
      expect((await chat(model, tokenA)).status, JSON.stringify(model)).toBe(404);
    }
  }, 300_000);

  it("/api/v1/models lists <run>@best (root: the step it serves) and only the checkpoints that remain", async () => {
    const list = async (token: string) =>
      ((await (await handleModels(new Request("http://127.0.0.1/api/v1/models", { headers: { authorization: `Bearer ${token}` } }), { db: db() })).json()) as {
        data: { id: string; root?: string; validation_reward?: number }[];
      }).data;
    const mine = await list(tokenA);
    expect(mine.find((m) => m.id === `${runNumber}@best`)).toMatchObject({ root: `${runNumber}@${expectedBest.step}`, validation_reward: expectedBest.reward });
    const steps = mine.filter((m) => m.id.startsWith(`${runNumber}@`) && m.id !== `${runNumber}@best`).map((m) => m.id);
    expect(steps.sort()).toEqual([...new Set([expectedBest.step, STEPS])].map((s) => `${runNumber}@${s}`).sort());
    expect((await list(tokenB)).map((m) => m.id)).not.toContain(`${runNumber}@best`);
  });

  // Last: it deletes what the tests above read.
  it("the panel's Delete (checkpoints.delete): members only, the newest refused by name, files and row gone, a repeat is fine", async () => {
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    const member = await callerAs(db(), ws, { role: "member" });
    await expect(viewer.checkpoints.delete({ runId, step: STEPS })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(member.checkpoints.delete({ runId, step: STEPS })).rejects.toThrow(/step 4 is run #\d+'s newest checkpoint/);
    const kept = (await db().checkpoint.findMany({ where: { runId }, select: { step: true } })).map((r) => r.step);
    const older = kept.filter((s) => s !== STEPS);
    // The best-validated checkpoint, when it is not the newest, is the older one retention kept.
    expect(older).toEqual(expectedBest.step === STEPS ? [] : [expectedBest.step]);
    for (const step of older) {
      // First while an active eval reads it: kept (files and row), marked, and deleted when the eval ends.
      const evalRun = await createRunningRun(db(), ws);
      await db().run.update({ where: { id: evalRun }, data: { kind: "eval", evalModel: checkpointModelName(runId, step) } });
      const held = await member.checkpoints.delete({ runId, step });
      expect(held).toMatchObject({ deleted: 0, deferred: [{ step, held_by: expect.stringMatching(/evaluates it/) }] });
      expect(await completeSteps(testRunner!.runsDir, runId)).toContain(step);
      expect((await member.checkpoints.list({ runId })).items.find((c) => c.step === step)).toMatchObject({ deletePending: true });
      expect(await stopRun(db(), evalRun, { runnerMayRun: false })).toBe(true);
      const end = Date.now() + 60_000;
      while (await db().checkpoint.count({ where: { runId, step } })) {
        if (Date.now() > end) throw new Error(`checkpoint ${step} was not deleted after its eval ended`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await completeSteps(testRunner!.runsDir, runId)).not.toContain(step);
      expect(await member.checkpoints.delete({ runId, step })).toEqual({ deleted: 0, deferred: [] });
    }
    expect((await member.checkpoints.list({ runId })).items.map((c) => c.step)).toEqual([STEPS]);
  });
});
