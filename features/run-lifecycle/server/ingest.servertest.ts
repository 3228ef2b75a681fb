/**
 * The ingestion service's follow loop against a scripted runner: batching, a stream that drops mid-run
 * (resumed after the stored lastSeq, duplicates ignored), and a run its runner lost.
 *   npx vitest run --project server features/run-lifecycle/server/ingest.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunEvent, type RunnerStatus } from "@contracts";
import { AppError } from "@/server/errors";
import { type RunnerEventHandlers, type RunnerHandle } from "@/server/runner-client";
import { createRunningRun, createTestDb, newWorkspace, runEvents, type TestDb } from "@/server/test/harness";
import { IngestService, ingestEvents, storableStrings } from "./ingest";
import { trajectoryToRow } from "@/server/run-convert";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

/** A runner that serves `log` for one run; `script` decides what each subscription delivers. */
function fakeRunner(
  id: string,
  opts: {
    log: RunEvent[];
    knows: boolean;
    script: (after: number, h: RunnerEventHandlers, attempt: number) => void;
  },
) {
  const subscriptions: number[] = [];
  const handle: RunnerHandle = {
    id,
    name: "fake",
    url: "http://fake",
    workspaceId: null,
    validate: async () => [],
    start: async () => ({ ok: true, run_id: "x" }),
    stop: async () => {},
    rescore: async () => ({ ok: false, error: "not used here", diagnostics: [] }),
    status: async (): Promise<RunnerStatus> => ({
      runner: "fake",
      engine: { state: "ready", restarts: 0, health: null },
      runs: opts.knows ? opts.log.slice(0, 1).map((e) => ({ run_id: e.run_id, status: "running", last_seq: 0, step: 0 })) : [],
    }),
    events(_runId, afterSeq, h) {
      subscriptions.push(afterSeq);
      let live = true;
      const guarded: RunnerEventHandlers = {
        onEvent: (e) => live && h.onEvent(e),
        onError: (e) => live && h.onError(e),
        onComplete: () => live && h.onComplete(),
      };
      setTimeout(() => opts.script(afterSeq, guarded, subscriptions.length), 5);
      return { unsubscribe: () => (live = false) };
    },
  };
  return { handle, subscriptions };
}

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("IngestService", () => {
  it("resumes a dropped stream after the stored lastSeq and ends up with exactly the runner's log", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const runner = await db().runner.create({ data: { name: `fake-${ws}`, url: "http://fake", tokenHash: "x" } });
    await db().run.update({ where: { id: runId }, data: { runnerId: runner.id } });
    const log = runEvents(runId);
    const fake = fakeRunner(runner.id, {
      log,
      knows: true,
      script: (after, h, attempt) => {
        const rest = log.filter((e) => e.seq > after);
        if (attempt === 1) {
          // First connection: 7 events, one of them twice, then the connection drops.
          for (const e of rest.slice(0, 7)) h.onEvent(e);
          h.onEvent(rest[2]);
          h.onError(new AppError("RUNNER_UNAVAILABLE", "socket hang up"));
          return;
        }
        // Later: replays one already-stored event (a runner may), then the rest, then ends.
        const prev = log.find((e) => e.seq === after);
        if (prev) h.onEvent(prev);
        for (const e of rest) h.onEvent(e);
        h.onComplete();
      },
    });
    const ingest = new IngestService(db(), { runnerFor: async () => fake.handle, scanMs: 60_000, log: () => {} });
    await ingest.start();
    try {
      const run = await waitFor(
        () => db().run.findUniqueOrThrow({ where: { id: runId } }),
        (r) => r.status === "completed",
      );
      expect(run).toMatchObject({ status: "completed", lastSeq: log.length, rolloutCount: 8, errorCount: 1 });
      const stored = await db().runEvent.findMany({ where: { runId }, orderBy: { seq: "asc" }, select: { seq: true } });
      expect(stored.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
      expect(await db().trajectory.count({ where: { runId } })).toBe(8);
      expect(fake.subscriptions[0]).toBe(0);
      expect(fake.subscriptions[1]).toBe(7); // resumed after what was stored
      expect(ingest.isFollowing(runId)).toBe(false); // finished runs are let go
    } finally {
      await ingest.stop();
    }
  });

  it("fails a running run that its runner no longer knows and that sent nothing for a while", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const runner = await db().runner.create({ data: { name: `lost-${ws}`, url: "http://fake", tokenHash: "x" } });
    const old = new Date(Date.now() - 120_000);
    await db().run.update({ where: { id: runId }, data: { runnerId: runner.id, startedAt: old, createdAt: old, lastHeartbeatAt: old } });
    const fake = fakeRunner(runner.id, {
      log: [],
      knows: false,
      script: (_after, h) => h.onError(new AppError("RUNNER_ERROR", `no run ${runId} on this runner`)),
    });
    const ingest = new IngestService(db(), { runnerFor: async () => fake.handle, lostAfterMs: 30_000, scanMs: 60_000, log: () => {} });
    await ingest.start();
    try {
      const run = await db().run.findUniqueOrThrow({ where: { id: runId } });
      expect(run.status).toBe("failed");
      expect(run.error).toMatch(/runner lost the run/);
      expect(await db().run.count({ where: { workspaceId: ws, status: { in: ["queued", "running"] } } })).toBe(0);
    } finally {
      await ingest.stop();
    }
  });

  it("stores each trajectory exactly as trajectoryToRow describes it, and a batch stored twice changes nothing", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const log = runEvents(runId).map((e) =>
      // A NUL in sampled text is stored as U+FFFD, in the event and in its trajectory alike.
      e.seq === 2 && e.type === "rollout.finished" ? { ...e, payload: { ...e.payload, model: "base\u0000model", logs: ["line"] } } : e,
    );
    await ingestEvents(db(), runId, log.slice(0, 9));
    await ingestEvents(db(), runId, log); // overlaps the first batch: skipped, not doubled
    const rows = await db().trajectory.findMany({ where: { runId }, orderBy: { seq: "asc" } });
    const expected = log
      .map(storableStrings)
      .flatMap((e) => (e.type === "rollout.finished" ? [trajectoryToRow(runId, e.seq, e.payload)] : []))
      .map((r) => ({ ...r, error: r.error ?? null }));
    expect(rows.map(({ createdAt: _, ...r }) => r)).toEqual(expected);
    expect(rows[0]!.model).toBe("base\uFFFDmodel");
    const steps = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(steps.map((s) => s.step)).toEqual([0, 1]);
    expect(await db().runEvent.count({ where: { runId } })).toBe(log.length);
  });
});
