/**
 * Chaos, finding 1 of issue 17, re-tried exactly as reported on real processes: a train run on the REAL
 * runner (a child process, with its REAL engine); the runner paused (SIGSTOP) until the run shows "runner
 * lost"; Stop pressed ("stopped while the runner was unreachable"); the runner continued (SIGCONT); after a
 * few seconds, Resume. Before the run lifecycle, the old attempt's run.finished was stored after the resume,
 * made the run `stopped` again within 3 s while the runner trained on, and the rest of the run (events, a
 * checkpoint, its step) never reached the database.
 *
 * Now: the run stays running, completes, and the runner's log equals the database's events, seq for seq —
 * no gap, no duplicate — with every step and checkpoint stored, and what the page folds from them says the
 * same.
 *   npx vitest run --project server server/chaos/resume-after-stop.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyEvents, initialRunState } from "@/features/run-view";
import { runnerById } from "../runner-client";
import { dispatcherFor } from "@/features/run-lifecycle/server";
import { IngestService } from "@/features/run-lifecycle/server";
import { listEvents } from "@/features/runs/server";
import { RunnerHeartbeat } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { callerFor, createTestDb, newWorkspace, templateFiles, type TestDb } from "../test/harness";
import { startRunnerProcess, type RunnerProcess } from "../test/runner-process";

const LOST_AFTER_MS = 3_000;
const STEPS = 5;

let tdb: TestDb;
let runner: RunnerProcess;
let ingest: IngestService;
let monitor: RunnerHeartbeat;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  runner = await startRunnerProcess(db(), "chaos-resume", {}, { engine: "shared" }); // it pauses the runner, never the engine
  ingest = new IngestService(db(), { runnerFor: (id) => runnerById(db(), id), scanMs: 500, lostAfterMs: LOST_AFTER_MS, maxBackoffMs: 2_000, log: () => {} });
  await ingest.start();
  monitor = new RunnerHeartbeat(db(), { heartbeatMs: 500, lostAfterMs: LOST_AFTER_MS, log: () => {} });
  monitor.start();
  dispatcherFor(db()).start();
}, 600_000);

afterAll(async () => {
  await monitor?.stop();
  await ingest?.stop();
  await dispatcherFor(db()).stop();
  await runner?.close();
  await tdb?.drop();
}, 60_000);

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 300_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("Stop while the runner is unreachable, then Resume", () => {
  it("keeps the rest of the run: it stays running, completes, and the runner's log = the database, seq for seq", async () => {
    const ws = await newWorkspace(db());
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const api = callerFor(db(), ws, "chaos-resume");
    const files = templateFiles({ num_steps: STEPS, groups_per_step: 1, rollouts_per_group: 2, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 8 } });
    const started = await api.runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    const runId = started.runId;
    const row = () => db().run.findUniqueOrThrow({ where: { id: runId } });

    await until("the first step", row, (r) => r.status === "running" && r.currentStep >= 1);
    runner.pause();
    await until("runner lost", row, (r) => r.status === "lost", 60_000);
    expect(await api.runs.stop({ id: runId })).toEqual({ id: runId, status: "stopped" });
    runner.resume();
    // As reported: ~10 s later (the ingest scan tells the runner to stop the attempt meanwhile).
    await until("the runner's stop of attempt 1", async () => runner.log(runId), (log) => log.some((e) => e.type === "run.finished"), 60_000);
    await new Promise((r) => setTimeout(r, 3_000));

    const resumed = await api.runs.resume({ id: runId });
    expect(resumed).toMatchObject({ ok: true, moved: false });
    // The finding: within 3 s it read `stopped` again. It must stay running until it completes.
    const seen = new Set<string>();
    const done = await until("the resumed run's end", async () => {
      const r = await row();
      seen.add(r.status);
      return r;
    }, (r) => r.status !== "running");
    expect([...seen]).toEqual(["running", "completed"]);
    expect(done).toMatchObject({ status: "completed", attempt: 2, attemptOpen: false, error: null });

    // The runner's log and the database agree, seq for seq.
    const log = runner.log(runId);
    await until("every event stored", row, (r) => r.lastSeq === log.length, 30_000);
    const stored = await listEvents(db(), ws, { runId, afterSeq: 0, limit: 2_000 });
    expect(stored.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1));
    expect(stored.map((e) => e.type)).toEqual(log.map((e) => e.type));
    // Two attempts in the log: the stopped one's end, then the resumed one from start to finish.
    expect(log.filter((e) => e.type === "run.finished").map((e) => e.attempt)).toEqual([1, 2]);
    // Every step trained and checkpointed, once.
    const steps = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(steps.map((s) => s.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    const checkpoints = await db().checkpoint.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(checkpoints.map((c) => c.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    // The page, folding the same events, says the same.
    const page = applyEvents(initialRunState, stored);
    expect(page.status).toBe("completed");
  }, 900_000);
});
