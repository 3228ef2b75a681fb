/**
 * Chaos: the runner's disk fills under a running run — on a REAL full disk (a small tmpfs as the runner's
 * runs folder, filled to ENOSPC; the test fails, saying why, where it cannot mount one), the REAL runner
 * server, real Postgres and the web server's real ingestion, dispatcher and resume. Each case compares the
 * runner's log, the database and the runner's status:
 *
 *   1. the disk fills while the run samples (stand-in engine: the engine is not the point): no torn line,
 *      no seq reused, the run says "disk full on runner <name>" although its run.finished could not be
 *      written, new runs are refused with the reason; space freed, the run's end is written and stored,
 *      the run resumes and completes: log = database, seq 1..n, each step once
 *   2. the runner's log lost lines the database holds (cut while the runner was down, as a crash before
 *      they reached the disk would): resume hands the stored log back, the run continues after the stored
 *      seq and nothing it writes is dropped as a duplicate
 *   3. a checkpoint the real engine cannot save (real SmolLM2 engine): the run fails with the reason, no
 *      checkpoint.saved for that step, new runs refused; space freed, the run resumes from the previous
 *      checkpoint and completes
 *
 *   npx vitest run --project server server/chaos/disk.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTerminalStatus, type RunEvent } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startRunnerServer, type RunnerServer } from "@/gpu-runner/src/server";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner, runnerById, type RunnerHandle } from "../runner-client";
import { callerFor, createTestDb, newWorkspace, templateFiles, type TestDb } from "../test/harness";
import { mountSmallDisk, type SmallDisk } from "../test/small-disk";
import { startStandInEngine, type StandInEngine } from "../test/stand-in-engine";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { IngestService } from "@/features/run-lifecycle/server";
import { rowToEvent } from "../run-convert";
import { resumeRun } from "@/features/run-lifecycle/server";
import { recordRunnerAnswer } from "@/features/runners/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

async function until<T>(
  what: string,
  ms: number,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  /** What the state was, said when it times out. */
  state?: () => Promise<unknown>,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}${state ? `: ${JSON.stringify(await state())}` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The runner's events.jsonl: every line whole (it ends with a newline, each line parses). */
function runnerLog(runsDir: string, runId: string): RunEvent[] {
  const text = fs.readFileSync(path.join(runsDir, runId, "events.jsonl"), "utf8");
  if (text.length > 0) expect(text.endsWith("\n"), "the log ends with a whole line").toBe(true);
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l, i) => {
      try {
        return JSON.parse(l) as RunEvent;
      } catch {
        throw new Error(`events.jsonl line ${i + 1} is torn: ${l.slice(0, 120)}`);
      }
    });
}

async function stored(runId: string): Promise<RunEvent[]> {
  const rows = await db().runEvent.findMany({ where: { runId }, orderBy: { seq: "asc" } });
  return rows.map(rowToEvent);
}

/** Log = database, seq 1..n in both, no seq twice. */
async function expectSameRecord(runsDir: string, runId: string): Promise<RunEvent[]> {
  const log = runnerLog(runsDir, runId);
  const db = await stored(runId);
  expect(log.map((e) => e.seq)).toEqual(log.map((_, i) => i + 1));
  expect(db.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
  expect(db).toEqual(log);
  return log;
}

const stepsOf = (log: RunEvent[], type: "step.finished" | "checkpoint.saved") => log.flatMap((e) => (e.type === type ? [e.payload.step] : []));

async function runRow(runId: string) {
  return db().run.findUniqueOrThrow({ where: { id: runId } });
}

/** A rollout.finished longer than a disk block: a full disk cannot take one in the slack of the log's last block. */
const LONG_REPLY = `apple ${"and ".repeat(1500)}`;

describe("the runner's disk fills under a running run (real runner, stand-in engine, real Postgres)", () => {
  const NAME = "chaos-disk";
  const TOKEN = "chaos-disk-runner-token-0123456789";
  let disk: SmallDisk;
  let engine: StandInEngine;
  let runner: RunnerServer;
  let row: { id: string };
  let ingest: IngestService;
  let ws: string;
  /** The first chat for this model fills the disk (before it is answered). */
  let fillOnModel: string | null = null;
  /** Chats for this model wait until released: the run is held at that step. */
  let hold: { model: string; reached: () => void; released: Promise<void> } | null = null;

  const startRunner = (port = "0") =>
    startRunnerServer({
      env: loadRunnerEnv({
        RUNNER_PORT: port,
        RUNNER_TOKEN: TOKEN,
        ENGINE_URL: engine.url,
        ENGINE_TOKEN: "stand-in-engine-token",
        ROLLBOOK_RUNS_DIR: disk.dir,
        RUNNER_NAME: NAME,
      } as Partial<NodeJS.ProcessEnv> as NodeJS.ProcessEnv),
      onEngineLog: () => {},
      supervisor: { healthIntervalMs: 500 },
    });

  beforeAll(async () => {
    disk = mountSmallDisk("32m");
    engine = await startStandInEngine({
      runsDir: disk.dir,
      reply: LONG_REPLY,
      onChat: async (model) => {
        if (model === hold?.model) {
          hold.reached();
          await hold.released;
        }
        if (model !== fillOnModel) return;
        fillOnModel = null;
        disk.fill();
      },
    });
    runner = await startRunner();
    await runner.supervisor.waitReady(30_000);
    row = await registerRunner(db(), { name: NAME, url: runner.url, token: TOKEN });
    ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 200, lostAfterMs: 1_500, log: () => {} });
    await ingest.start();
    ws = await newWorkspace(db());
  });
  afterAll(async () => {
    await ingest?.stop();
    await runner?.close();
    await engine?.close();
    disk?.unmount();
  });

  const handle = (): Promise<RunnerHandle> => runnerById(db(), row.id);
  const resume = (runId: string) => resumeRun(db(), ws, runId, { byId: (id) => runnerById(db(), id), fallback: handle });
  const files = (numSteps: number) => templateFiles({ num_steps: numSteps, groups_per_step: 2, rollouts_per_group: 2, max_concurrency: 4, eval_every: 0 });

  async function startRun(numSteps: number): Promise<string> {
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const started = await callerFor(db(), ws, NAME).runs.start({ experimentId, files: files(numSteps), kind: "train" });
    if (!started.ok) throw new Error(started.error);
    await dispatcherFor(db()).idle();
    return started.runId;
  }

  it("no torn line, no seq reused, 'disk full on runner <name>' on the run, new runs refused; freed and resumed it completes with no gap and no duplicate", async () => {
    const runId = await startRun(5);
    fillOnModel = `${runId}@2`; // the first model call of step 3
    const reason = new RegExp(`^disk full on runner ${NAME}: no space left on device \\(ENOSPC\\) writing ${runId}/events\\.jsonl \\(\\d+ of \\d+ bytes written, cut back to the last whole line\\)$`);
    const failed = await until("the run to fail", 60_000, async () => {
      const r = await runRow(runId);
      return isTerminalStatus(r.status) && r;
    });
    expect(fillOnModel).toBeNull(); // the disk did fill
    expect({ status: failed.status, error: failed.error }).toEqual({ status: "failed", error: expect.stringMatching(reason) });

    // The runner's log: whole lines, 1..n; the database holds exactly those; the runner's status says why.
    const log = runnerLog(disk.dir, runId);
    await until("the database to hold the whole log", 10_000, async () => (await runRow(runId)).lastSeq === log.length);
    await expectSameRecord(disk.dir, runId);
    expect(log.some((e) => e.type === "run.finished")).toBe(false); // it could not be written
    expect(stepsOf(log, "checkpoint.saved")).toEqual([1, 2]);
    const status = await (await handle()).status();
    expect(status.disk_error).toBe(`disk full on runner ${NAME}: no space left on device (ENOSPC)`);
    expect(status.runs.find((r) => r.run_id === runId)).toMatchObject({ status: "failed", last_seq: log.length, error: expect.stringMatching(reason) });

    // New work is refused with the reason (and leaves nothing on the runner's disk): the run is not failed for
    // the runner's condition but waits in the queue, and the runner reads "error: disk full" until it can write.
    const refusedId = await startRun(2);
    expect(await runRow(refusedId)).toMatchObject({ status: "queued", runnerId: null, error: null });
    const runnerRow = await db().runner.findUniqueOrThrow({ where: { id: row.id } });
    expect(runnerRow).toMatchObject({ health: "error", lastError: expect.stringMatching(new RegExp(`^disk full on runner ${NAME}: .*new runs are refused`)) });
    expect(runnerRow.lastError).not.toContain(runId); // another run's id is none of a workspace's business
    expect(fs.existsSync(path.join(disk.dir, refusedId))).toBe(false);
    await callerFor(db(), ws, NAME).runs.stop({ id: refusedId }); // it would take the runner's slot once the disk is back

    // A log handed to it now (a move, a hand-back) is refused as such, and the runner stays up.
    const handed = await fetch(`${runner.url}/runs/handed-${refusedId}/events.jsonl?checkpoint_step=0`, {
      method: "PUT",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: log.map((e) => JSON.stringify({ ...e, run_id: `handed-${refusedId}` })).join("\n") + "\n",
    });
    expect(handed.status).toBe(507);
    expect(((await handed.json()) as { error: { message: string } }).error.message).toBe(`disk full on runner ${NAME}: no space left on device (ENOSPC): the upload was not kept`);
    expect((await (await handle()).status()).runs.some((r) => r.run_id === `handed-${refusedId}`)).toBe(false);

    // Space again: the run's end is written (the next seq) and stored; the runner takes work again.
    disk.free();
    const ended = await until("the run's end in the runner's log", 20_000, () => {
      const now = runnerLog(disk.dir, runId);
      return now.at(-1)?.type === "run.finished" && now;
    });
    expect(ended.slice(0, -1)).toEqual(log);
    expect(ended.at(-1)).toMatchObject({ seq: log.length + 1, payload: { status: "failed", error: expect.stringMatching(reason) } });
    await until("the database to store the run's end", 10_000, async () => (await runRow(runId)).lastSeq === ended.length);
    expect(await runRow(runId)).toMatchObject({ status: "failed", error: expect.stringMatching(reason) });
    // The next heartbeat finds it writing again: healthy, and the dispatcher sends it runs again.
    expect(await recordRunnerAnswer(db(), row.id, await (await handle()).status())).toBe("healthy");
    expect(await db().runner.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({ health: "healthy", lastError: null });

    // Resumed: it continues from checkpoint 2, after the stored seq, to the end.
    expect(await resume(runId)).toMatchObject({ ok: true, moved: false });
    const done = await until("the resumed run to end", 60_000, async () => {
      const r = await runRow(runId);
      return isTerminalStatus(r.status) && r;
    });
    expect(done.status).toBe("completed");
    const final = await expectSameRecord(disk.dir, runId);
    expect(final.slice(0, ended.length)).toEqual(ended);
    expect(stepsOf(final, "checkpoint.saved")).toEqual([1, 2, 3, 4, 5]);
    expect(stepsOf(final, "step.finished")).toEqual([1, 2, 3, 4, 5]);
    expect(await db().step.count({ where: { runId } })).toBe(5);
    expect(await db().trajectory.count({ where: { runId } })).toBe(5 * 4); // step 3's first attempt replaced
  });

  it("a runner log that lost lines the database holds is handed back on resume: nothing is numbered over stored events", async () => {
    const runId = await startRun(6);
    // Held at step 3 (checkpoint 2 saved), then stopped on the runner: its run.finished is the last event,
    // stored before ingestion lets the run go.
    let release = () => {};
    const atStep3 = new Promise<void>((reached) => {
      hold = { model: `${runId}@2`, reached, released: new Promise<void>((r) => (release = r)) };
    });
    await atStep3;
    await (await handle()).stop(runId);
    hold = null;
    release();
    const stopped = await until(
      "the stop stored",
      30_000,
      async () => {
        const r = await runRow(runId);
        return r.status === "stopped" && r.lastSeq === runnerLog(disk.dir, runId).length && r;
      },
      async () => {
        const r = await runRow(runId);
        const log = runnerLog(disk.dir, runId);
        return { db: { status: r.status, error: r.error, lastSeq: r.lastSeq }, log: { length: log.length, last: log.at(-1)?.type }, following: ingest.isFollowing(runId) };
      },
    );
    await expectSameRecord(disk.dir, runId);

    // The runner goes down and its log loses its last 6 lines (never synced before a crash, say).
    const port = String(new URL(runner.url).port);
    await runner.close();
    const file = path.join(disk.dir, runId, "events.jsonl");
    const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
    fs.writeFileSync(file, lines.slice(0, -6).join("\n") + "\n");
    runner = await startRunner(port);
    await runner.supervisor.waitReady(30_000);
    expect((await (await handle()).status()).runs.find((r) => r.run_id === runId)!.last_seq).toBeLessThan(stopped.lastSeq);

    expect(await resume(runId)).toMatchObject({ ok: true, moved: false });
    const done = await until("the resumed run to end", 60_000, async () => {
      const r = await runRow(runId);
      return isTerminalStatus(r.status) && r;
    });
    expect(done.status).toBe("completed");
    const final = await expectSameRecord(disk.dir, runId);
    // The resume's first event comes right after what was stored; the stored events are the runner's again.
    expect(final[stopped.lastSeq]).toMatchObject({ seq: stopped.lastSeq + 1 });
    expect(final.slice(stopped.lastSeq).find((e) => e.type === "run.started")).toBeDefined();
    expect(final.some((e) => e.type === "run.finished" && e.payload.error === "the runner restarted while this run was in progress")).toBe(false);
    expect(stepsOf(final, "step.finished")).toEqual([1, 2, 3, 4, 5, 6]);
    expect(stepsOf(final, "checkpoint.saved")).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: "x".repeat(32) }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`disk.servertest: the real-engine case is skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);

describe.skipIf(!engineAvailable)("a checkpoint the real engine cannot save on a full disk", () => {
  const NAME = "chaos-disk-engine";
  const TOKEN = "chaos-disk-engine-token-0123456789";
  let disk: SmallDisk;
  let runner: TestRunner;
  let row: { id: string };
  let ingest: IngestService;
  let ws: string;

  beforeAll(async () => {
    // SmolLM2-135M's rank-8 LoRA with its AdamW state is ~30 MB a checkpoint.
    disk = mountSmallDisk("256m");
    runner = await startTestRunner({ name: NAME, token: TOKEN, env: { ROLLBOOK_RUNS_DIR: disk.dir } });
    row = await registerRunner(db(), { name: NAME, url: runner.server.url, token: TOKEN });
    ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 200, lostAfterMs: 3_000, log: () => {} });
    await ingest.start();
    ws = await newWorkspace(db());
  }, 600_000);
  afterAll(async () => {
    await ingest?.stop();
    await runner?.close();
    disk?.unmount();
  });

  it("fails the step with the reason, records no checkpoint for it, refuses new runs; freed, the run resumes from the previous checkpoint", async () => {
    const files = templateFiles({ num_steps: 3, groups_per_step: 2, rollouts_per_group: 2, max_concurrency: 4, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 8 } });
    const api = callerFor(db(), ws, NAME);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const started = await api.runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(started.error);
    const runId = started.runId;
    await dispatcherFor(db()).idle();
    // Full as soon as checkpoint 1 is logged, but for 256 KiB: step 2's log lines fit, its checkpoint does not.
    await until("checkpoint 1 in the runner's log", 300_000, () => runner.server.manager.events.events(runId).some((e) => e.type === "checkpoint.saved"));
    disk.fill();
    disk.leave(256 * 1024);

    const failed = await until("the run to fail", 300_000, async () => {
      const r = await runRow(runId);
      return isTerminalStatus(r.status) && r;
    });
    const log = await expectSameRecord(disk.dir, runId);
    // Step 2's checkpoint, unless a slow fill let step 2 finish first: then step 3's.
    const saved = stepsOf(log, "checkpoint.saved");
    const lost = saved.length + 1;
    expect(lost, "a checkpoint was lost to the full disk").toBeLessThanOrEqual(3);
    expect(saved).toEqual(Array.from({ length: lost - 1 }, (_, i) => i + 1));
    const name = String(lost).padStart(4, "0");
    const reason = new RegExp(`^disk full on runner ${NAME}: training step ${lost} failed: disk full: checkpoint ${name} of run ${runId} could not be saved`);
    expect({ status: failed.status, error: failed.error }).toEqual({ status: "failed", error: expect.stringMatching(reason) });
    expect((await db().checkpoint.findMany({ where: { runId }, orderBy: { step: "asc" } })).map((c) => c.step)).toEqual(saved);
    // No folder for the lost step, no temp folder.
    expect(fs.readdirSync(path.join(disk.dir, runId, "checkpoints")).sort()).toEqual(saved.map((s) => String(s).padStart(4, "0")));
    expect((await (await runnerById(db(), row.id)).status()).disk_error).toBe(`disk full on runner ${NAME}: the engine could not save a checkpoint`);

    const refused = await api.runs.start({ experimentId, files, kind: "train" });
    if (!refused.ok) throw new Error(refused.error);
    await dispatcherFor(db()).idle();
    expect(await runRow(refused.runId)).toMatchObject({ status: "queued", runnerId: null });
    expect(await db().runner.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({ health: "error", lastError: expect.stringMatching(new RegExp(`^disk full on runner ${NAME}`)) });
    await api.runs.stop({ id: refused.runId });

    disk.free();
    expect(await resumeRun(db(), ws, runId, { byId: (id) => runnerById(db(), id), fallback: () => runnerById(db(), row.id) })).toMatchObject({ ok: true });
    const done = await until("the resumed run to end", 300_000, async () => {
      const r = await runRow(runId);
      return isTerminalStatus(r.status) && r;
    });
    expect({ status: done.status, error: done.error }).toEqual({ status: "completed", error: null });
    const final = await expectSameRecord(disk.dir, runId);
    expect(stepsOf(final, "checkpoint.saved")).toEqual([1, 2, 3]);
    expect(stepsOf(final, "step.finished")).toEqual([1, 2, 3]);
  }, 900_000);
});
