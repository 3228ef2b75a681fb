/**
 * Honest state: a run whose runner stops answering is shown "lost" (and comes back, or ends), Stop works
 * while the runner is unreachable (the REAL runner behind a TCP proxy that is cut and restored), a redone
 * step is counted once (counters = the stored trajectories; runs list = run page = reducer), and an eval's
 * model is checked before it starts.
 *   npx vitest run --project server features/run-lifecycle/server/honest-state.servertest.ts
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEvent, meanReward, type RunnerStatus } from "@contracts";
import { applyEvents, initialRunState } from "@/features/run-view";
import { AppError } from "@/server/errors";
import { registerRunner, runnerHandle, tokenHash, type RunnerEventHandlers, type RunnerHandle } from "@/server/runner-client";
import { startEnginelessRunner, type EnginelessRunner } from "@/server/test/engineless-runner";
import { callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, templateFiles, trajectory, type TestDb } from "@/server/test/harness";
import { IngestService, ingestEvents } from "./ingest";
import { getRun, STOPPED_UNREACHABLE } from "@/features/runs/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
beforeAll(async () => {
  tdb = await createTestDb();
});
afterAll(async () => {
  await tdb?.drop();
});

async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const unreachable = () => new AppError("RUNNER_UNAVAILABLE", "runner 'fake' at http://fake unreachable: connect ECONNREFUSED");

describe("runner lost", () => {
  it("lost → running → completed: a runner that stops answering marks the run lost, and its return resumes ingestion", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const runner = await db().runner.create({ data: { name: `flaky-${ws}`, url: "http://fake", tokenHash: "x" } });
    await db().run.update({ where: { id: runId }, data: { runnerId: runner.id } });
    const log = runEvents(runId);
    let up = true;
    const handle: RunnerHandle = {
      id: runner.id,
      name: "fake",
      workspaceId: null,
      url: "http://fake",
      validate: async () => [],
      start: async () => ({ ok: true, run_id: runId }),
      stop: async () => {},
      rescore: async () => ({ ok: false, error: "not used here", diagnostics: [] }),
      status: async (): Promise<RunnerStatus> => {
        if (!up) throw unreachable();
        return { runner: "fake", engine: { state: "ready", restarts: 0, health: null }, runs: [{ run_id: runId, status: "running", last_seq: 0, step: 0 }] };
      },
      events(_id, afterSeq, h: RunnerEventHandlers) {
        const timer = setTimeout(() => {
          if (!up) return h.onError(unreachable());
          // Up: the first 5 events, then the runner goes away mid-stream; after its return, the rest.
          const rest = log.filter((e) => e.seq > afterSeq);
          if (afterSeq === 0) {
            for (const e of rest.slice(0, 5)) h.onEvent(e);
            up = false;
            h.onError(unreachable());
            return;
          }
          for (const e of rest) h.onEvent(e);
          h.onComplete();
        }, 5);
        return { unsubscribe: () => clearTimeout(timer) };
      },
    };
    const ingest = new IngestService(db(), { runnerFor: async () => handle, scanMs: 100, lostAfterMs: 400, maxBackoffMs: 60_000, log: () => {} });
    await ingest.start();
    try {
      const lost = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: runId } }), (r) => r.status === "lost", 10_000);
      expect(lost.status).toBe("lost");
      expect(lost.lastSeq).toBe(5);
      // Since its last sign of life (the last event stored).
      expect(lost.lostSince).not.toBeNull();
      expect((await getRun(db(), ws, runId)).lostSince).toEqual(lost.lostSince);

      up = true; // the runner answers again and still has the run
      const done = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: runId } }), (r) => r.status === "completed");
      expect(done).toMatchObject({ status: "completed", lastSeq: log.length, lostSince: null, rolloutCount: 8 });
    } finally {
      await ingest.stop();
    }
  });

  it("a runner that comes back without the run fails it", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const runner = await db().runner.create({ data: { name: `gone-${ws}`, url: "http://fake", tokenHash: "x" } });
    await db().run.update({ where: { id: runId }, data: { runnerId: runner.id, status: "lost", lostSince: new Date() } });
    const handle = {
      id: runner.id,
      status: async (): Promise<RunnerStatus> => ({ runner: "fake", engine: { state: "ready", restarts: 0, health: null }, runs: [] }),
      events: (_id: string, _after: number, h: RunnerEventHandlers) => {
        setTimeout(() => h.onError(new AppError("RUNNER_ERROR", "no such run")), 5);
        return { unsubscribe: () => {} };
      },
    } as unknown as RunnerHandle;
    const ingest = new IngestService(db(), { runnerFor: async () => handle, scanMs: 60_000, lostAfterMs: 400, log: () => {} });
    await ingest.start();
    try {
      const run = await db().run.findUniqueOrThrow({ where: { id: runId } });
      expect(run.status).toBe("failed");
      expect(run.error).toMatch(/runner lost the run/);
    } finally {
      await ingest.stop();
    }
  });

  it("a runner restarted mid-run reports the lost run failed: it is never shown running again, and fails with the runner's reason", async () => {
    const ws = await newWorkspace(db());
    const runId = await createRunningRun(db(), ws);
    const runner = await db().runner.create({ data: { name: `restarted-${ws}`, url: "http://fake", tokenHash: "x" } });
    const stored = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true } });
    await db().run.update({ where: { id: runId }, data: { runnerId: runner.id, status: "lost", lostSince: new Date() } });
    const reason = "the runner restarted while this run was in progress";
    const finished = RunEvent.parse({ run_id: runId, seq: stored.lastSeq + 1, ts: Date.now(), type: "run.finished", payload: { status: "failed", error: reason, diagnostics: [] } });
    let scans = 0;
    let release = () => {};
    const released = new Promise<void>((r) => (release = r));
    const handle = {
      id: runner.id,
      name: "fake",
      status: async (): Promise<RunnerStatus> => {
        scans++;
        return { runner: "fake", engine: { state: "ready", restarts: 0, health: null }, runs: [{ run_id: runId, status: "failed", last_seq: finished.seq, step: 0, error: reason }] };
      },
      // Its run.finished is held back until the test has seen the scans answered: the status in between is
      // what a page shows meanwhile.
      events: (_id: string, afterSeq: number, h: RunnerEventHandlers) => {
        let live = true;
        void released.then(() => {
          if (!live) return;
          if (afterSeq < finished.seq) h.onEvent(finished);
          h.onComplete();
        });
        return { unsubscribe: () => (live = false) };
      },
    } as unknown as RunnerHandle;
    const ingest = new IngestService(db(), { runnerFor: async () => handle, scanMs: 100, lostAfterMs: 400, log: () => {} });
    await ingest.start();
    try {
      await waitFor(async () => scans, (n) => n >= 3, 10_000);
      expect(scans).toBeGreaterThanOrEqual(3);
      // Before: the answering runner "recovered" it — running, though the runner reports it failed.
      expect((await db().run.findUniqueOrThrow({ where: { id: runId } })).status).toBe("lost");
      release();
      const done = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: runId } }), (r) => r.status !== "lost");
      expect(done).toMatchObject({ status: "failed", error: reason, lastSeq: finished.seq });
    } finally {
      await ingest.stop();
    }
  });
});

/** A TCP proxy in front of the real runner: cut() makes the runner unreachable (refused), restore() brings it back. */
async function proxyTo(target: string) {
  const { port: targetPort } = new URL(target);
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(targetPort), "127.0.0.1");
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s));
          s.on("error", () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, "127.0.0.1", () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  await listen();
  return {
    url: () => `http://127.0.0.1:${port}`,
    cut: async () => {
      await new Promise<void>((resolve) => {
        server!.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
    restore: listen,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}

describe("Stop while the runner is unreachable (real runner)", () => {
  let runner: EnginelessRunner;
  let proxy: Awaited<ReturnType<typeof proxyTo>>;
  beforeAll(async () => {
    runner = await startEnginelessRunner("honest");
    proxy = await proxyTo(runner.url);
  });
  afterAll(async () => {
    await proxy?.close();
    await runner?.close();
  });

  it("records the stop at once, keeps it when the runner's late events arrive, and stops the run on the runner once it answers", async () => {
    const ws = await newWorkspace(db());
    const name = `proxied-${ws}`;
    const row = await registerRunner(db(), { name, url: proxy.url(), token: runner.token });
    const api = callerFor(db(), ws, name);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    // The runner has no engine: the dry run starts (run.started) and waits for the engine, running.
    const started = await api.runs.start({ experimentId, files: templateFiles(), kind: "dry-run" });
    if (!started.ok) throw new Error(started.error);
    const runId = started.runId;
    const direct = runnerHandle({ id: row.id, name, url: runner.url, tokenHash: tokenHash(runner.token), tokenCipher: null, workspaceId: null }, runner.token);
    const onRunner = async () => (await direct.status()).runs.find((r) => r.run_id === runId)?.status;

    const ingest = new IngestService(db(), { runnerFor: async () => runnerHandle(row), scanMs: 100, lostAfterMs: 500, log: () => {} });
    await ingest.start();
    try {
      await waitFor(() => db().run.findUniqueOrThrow({ where: { id: runId } }), (r) => r.lastSeq >= 1);
      await proxy.cut();
      const lost = await waitFor(() => db().run.findUniqueOrThrow({ where: { id: runId } }), (r) => r.status === "lost", 10_000);
      expect(lost.status).toBe("lost");
      expect(await onRunner()).toBe("running"); // it is alive there: only unreachable

      const t = Date.now();
      expect(await api.runs.stop({ id: runId })).toEqual({ id: runId, status: "stopped" });
      expect(Date.now() - t).toBeLessThan(5_000);
      expect(await db().run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ status: "stopped", error: STOPPED_UNREACHABLE, lostSince: null });

      await proxy.restore();
      // The scan tells the runner to stop it; the runner logs run.finished(stopped).
      expect(await waitFor(onRunner, (s) => s === "stopped", 15_000)).toBe("stopped");
      // The runner's late events (its own run.finished "stopped" among them) are stored, and change no verdict.
      const late = await new Promise<unknown[]>((resolve, reject) => {
        const got: unknown[] = [];
        direct.events(runId, 0, { onEvent: (e) => got.push(e), onError: reject, onComplete: () => resolve(got) });
      });
      const parsed = late.map((e) => RunEvent.parse(e));
      expect(parsed.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "stopped" } });
      const res = await ingestEvents(db(), runId, parsed);
      expect(res.statusChanged).toBe(false);
      const final = await db().run.findUniqueOrThrow({ where: { id: runId } });
      expect(final).toMatchObject({ status: "stopped", error: STOPPED_UNREACHABLE, lastSeq: parsed.length });
    } finally {
      await ingest.stop();
    }
  });
});

describe("a redone step is counted once", () => {
  /**
   * Attempt 1 of step 1 logs 3 rollouts, then the runner dies (run.finished failed); the resume redoes step 1:
   * the same 4 trajectory ids with other rewards, then finishes: 11 rollout.finished events, 8 trajectories
   * that count (step 0's 4 and the resume's 4 of step 1).
   */
  function redoneLog(runId: string): RunEvent[] {
    const base = runEvents(runId); // run.started, step 0 (4, one failing) + step 1 (4), eval, finished
    const started = base[0]!;
    const step0 = base.slice(1, 7); // 4 rollouts, step.finished 0, checkpoint.saved 0
    const killedAttempt = [0, 1, 2].map((i) => ({ type: "rollout.finished", payload: trajectory(i, 1, 0.9) }));
    const resumed = [
      { type: "run.finished", payload: { status: "failed", error: "the runner restarted while this run was in progress", diagnostics: [] } },
      { type: "run.started", payload: { ...started.payload, resumed_from_step: 0 } },
      ...base.slice(7).map((e) => ({ type: e.type, payload: e.payload })),
    ];
    const evs = [started, ...step0].map((e) => ({ type: e.type, payload: e.payload }));
    return [...evs, ...killedAttempt, ...resumed].map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: 1_700_000_000_000 + i }));
  }

  for (const batching of ["one batch", "event by event"] as const) {
    it(`rolloutCount, errorCount and mean reward equal the trajectories that count (${batching}); runs list = run page = reducer`, async () => {
      const ws = await newWorkspace(db());
      const runId = await createRunningRun(db(), ws);
      const log = redoneLog(runId);
      const resumedAt = log.findIndex((e) => e.type === "run.finished");
      const ingest = async (evs: RunEvent[]) => {
        if (batching === "one batch") await ingestEvents(db(), runId, evs);
        else for (const e of evs) await ingestEvents(db(), runId, [e]);
      };
      await ingest(log.slice(0, resumedAt + 1));
      // What resumeRun does before the runner's new events arrive.
      await db().run.update({ where: { id: runId }, data: { status: "running", error: null, finishedAt: null } });
      await ingest(log.slice(resumedAt + 1));

      const stored = await db().trajectory.findMany({ where: { runId } });
      expect(stored).toHaveLength(8);
      // The redone step's trajectories are the resume's (the later attempt), not the killed attempt's 0.9s.
      expect(stored.filter((t) => t.step === 1).map((t) => t.reward).sort()).toEqual([0, 0, 1, 1]);
      const run = await getRun(db(), ws, runId);
      expect(run.status).toBe("completed");
      expect(run.rolloutCount).toBe(stored.length);
      expect(run.errorCount).toBe(stored.filter((t) => t.error !== null).length);
      const expected = meanReward("train", stored.map((t) => ({ split: t.split as "train" | "val", reward: t.reward })));
      expect(expected).not.toBeNull();
      expect(run.rewardMean).toBeCloseTo(expected!, 12);

      const list = await callerFor(db(), ws).runs.list({});
      expect(list.items.find((r) => r.id === runId)?.rewardMean).toBe(run.rewardMean);
      // The run page folds the same log: the same rollouts, the same mean reward.
      const page = applyEvents(initialRunState, log);
      expect(page.rollouts).toHaveLength(run.rolloutCount);
      expect(page.errorCount).toBe(run.errorCount);
      expect(meanReward("train", page.rollouts)).toBeCloseTo(run.rewardMean!, 12);

      // Redelivering the whole log changes nothing.
      await ingestEvents(db(), runId, log);
      expect((await getRun(db(), ws, runId)).rolloutCount).toBe(8);
    });
  }
});

describe("an eval's model is checked before it starts", () => {
  it("refuses a checkpoint that does not exist, naming evalModel; no run row is written", async () => {
    const ws = await newWorkspace(db());
    const api = callerFor(db(), ws);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const trained = await createRunningRun(db(), ws);
    await db().checkpoint.create({ data: { runId: trained, step: 1, path: "runs/x/checkpoints/0001", sizeBytes: 1n } });
    const { number } = await db().run.findUniqueOrThrow({ where: { id: trained }, select: { number: true } });
    const files = templateFiles();
    const cases: [string, RegExp][] = [
      ["nope@1", /evalModel: no run 'nope' in this workspace/],
      [`${trained}@3`, new RegExp(`evalModel: run #${number} has no checkpoint at step 3 \\(its checkpoints are at steps 1\\)`)],
      ["gpt-5", /evalModel: 'gpt-5' is neither the base model/],
    ];
    for (const [evalModel, message] of cases) {
      await expect(api.runs.start({ experimentId, files, kind: "eval", evalModel })).rejects.toMatchObject({ code: "BAD_REQUEST", message: expect.stringMatching(message) });
    }
    expect(await db().run.count({ where: { workspaceId: ws } })).toBe(1);
    // Another workspace's checkpoint is not this workspace's model.
    const other = await newWorkspace(db());
    await expect(callerFor(db(), other).runs.start({ experimentId: (await ensureDefaultExperiment(db(), other)).id, files, kind: "eval", evalModel: `${trained}@1` })).rejects.toMatchObject({
      code: "BAD_REQUEST",
    });
  });
});
