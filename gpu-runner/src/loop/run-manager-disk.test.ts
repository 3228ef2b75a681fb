/**
 * RunManager on a disk that cannot take a write (ENOSPC from write(2), injected into the real event log):
 * the run fails with "disk full on runner <name>", its status says so even though its run.finished could not
 * be written, new runs are refused with the reason, and once writes succeed again the run's end is written
 * and new work is taken. A checkpoint the engine cannot save fails the run honestly; a resume that would
 * number events over what the web server stored is refused. (The same on a real full disk, with the real
 * runner and Postgres: server/chaos/disk.servertest.ts.)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ChatCompletionResponse, type ExperimentFiles, type RunEvent, type TrainStreamLine } from "../../../contracts";
import { REPO_ROOT } from "../env";
import { EventLog } from "../events/event-log";
import { type RunEngine } from "./run-loop";
import { RunManager } from "./run-manager";

function files(config: Record<string, unknown> = {}): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const base = { ...JSON.parse(read("config.json")), num_steps: 3, groups_per_step: 1, rollouts_per_group: 2, eval_every: 0, ...config };
  return { "scenario.ts": read("scenario.ts"), "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(base) };
}

/** An engine that answers every chat and trains every step (its checkpoints are only bookkeeping here). */
function fakeEngine(hooks: { onChat?: (step: number) => void; trainLine?: (step: number) => TrainStreamLine | null } = {}) {
  const saved = new Map<string, number>();
  const engine: RunEngine = {
    chat: async (body): Promise<ChatCompletionResponse> => {
      hooks.onChat?.(Number(/@(\d+)$/.exec(body.model)?.[1] ?? 0) + 1);
      return {
        id: "c",
        object: "chat.completion",
        created: 0,
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: "apple" },
            finish_reason: "stop",
            logprobs: { content: [{ token: "apple", logprob: -0.5 }, { token: "<e>", logprob: -0.1 }] },
            token_ids: [5, 2],
          },
        ],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        prompt_token_ids: [1, 2, 3],
      };
    },
    async *train(body) {
      const line = hooks.trainLine?.(body.step);
      if (line) {
        yield line;
        return;
      }
      saved.set(body.run_id, body.step);
      yield {
        type: "result",
        metrics: { loss: 0, grad_norm: 0, kl: 0, clip_fraction: 0, entropy: 0, probs_corr: 1, trained_tokens: 4, groups_submitted: 1, groups_trainable: 1, skipped: false, duration_s: 0 },
        checkpoint: { step: body.step, path: `/ckpt/${body.run_id}/${body.step}`, size_bytes: 1 },
        token_logprobs: {},
      };
    },
    latestStep: async (runId) => saved.get(runId) ?? 0,
    checkpoints: async (runId) => (saved.has(runId) ? [{ step: saved.get(runId)!, path: "/ckpt", size_bytes: 1 }] : []),
  };
  return engine;
}

let dir: string | null = null;
afterEach(() => {
  vi.restoreAllMocks();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = null;
});

function setup(engine: RunEngine) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-rm-disk-"));
  const events = new EventLog(dir);
  const manager = new RunManager(
    events,
    { engine, waitReady: async () => {}, status: () => ({ state: "ready", restarts: 0, health: null, last_restart: null }) },
    "gpu-test",
    undefined,
    undefined,
    undefined,
    { diskRetryMs: 60_000 }, // the test retries by hand (checkDisk)
  );
  return { events, manager, runsDir: dir };
}

/** From now on every write(2) fails as on a full disk. */
function fillDisk() {
  return vi.spyOn(fs, "writeSync").mockImplementation(() => {
    throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC", errno: -28, syscall: "write" });
  });
}

const fileEvents = (runsDir: string, runId: string): RunEvent[] => {
  const text = fs.readFileSync(path.join(runsDir, runId, "events.jsonl"), "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text.trimEnd().split("\n").map((l) => JSON.parse(l) as RunEvent);
};

describe("a runner whose disk fills during a run", () => {
  it("fails the run with the reason, reports it without its run.finished, refuses new runs, and recovers once writes succeed", async () => {
    let disk: ReturnType<typeof fillDisk> | null = null;
    const { events, manager, runsDir } = setup(fakeEngine({ onChat: (step) => step === 2 && (disk ??= fillDisk()) }));
    const spec = { run_id: "r1", workspace_id: "ws", kind: "train" as const, files: files(), resume: false };
    expect(await manager.start(spec)).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    expect(disk).not.toBeNull();

    const reason = /^disk full on runner gpu-test: no space left on device \(ENOSPC\) writing r1\/events\.jsonl \(\d+ of \d+ bytes written, cut back to the last whole line\)$/;
    const status = manager.status();
    // The runner's own reason names no run and no path (every workspace using the runner may read it).
    expect(status.disk_error).toBe("disk full on runner gpu-test: no space left on device (ENOSPC)");
    const run = status.runs.find((r) => r.run_id === "r1")!;
    expect(run).toMatchObject({ status: "failed", error: expect.stringMatching(reason) });
    // Whole lines only, seq 1..n without a gap, exactly what was handed out; no run.finished (it could not be written).
    const onDisk = fileEvents(runsDir, "r1");
    expect(onDisk.map((e) => e.seq)).toEqual(onDisk.map((_, i) => i + 1));
    expect(onDisk).toEqual(events.events("r1"));
    expect(run.last_seq).toBe(onDisk.length);
    expect(onDisk.some((e) => e.type === "run.finished")).toBe(false);
    expect(onDisk.filter((e) => e.type === "step.finished").map((e) => e.payload)).toMatchObject([{ step: 1 }]);

    // New work is refused with the reason while writes fail.
    const refused = await manager.start({ ...spec, run_id: "r2" });
    expect(refused).toMatchObject({ ok: false, error: expect.stringMatching(/^disk full on runner gpu-test: no space left on device \(ENOSPC\); new runs are refused until/) });
    expect((refused as { error: string }).error).not.toContain("r1");
    expect(fs.existsSync(path.join(runsDir, "r2"))).toBe(false);

    // Space again: the run's end is written (the next seq, nothing reused), the runner takes work again.
    disk!.mockRestore();
    expect(await manager.checkDisk()).toBe(true);
    const after = fileEvents(runsDir, "r1");
    expect(after.slice(0, onDisk.length)).toEqual(onDisk);
    expect(after.at(-1)).toMatchObject({ seq: onDisk.length + 1, type: "run.finished", payload: { status: "failed", error: expect.stringMatching(reason) } });
    expect(manager.status().disk_error).toBeNull();
    expect(await manager.start({ ...spec, run_id: "r3", files: files({ num_steps: 1 }) })).toMatchObject({ ok: true });
    await manager.waitFor("r3");
    expect(events.events("r3").at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });

    // Resumed: it continues after its last seq, from its last checkpoint.
    expect(await manager.start({ ...spec, resume: true, attempt: 2, last_seq: after.length })).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    const resumed = fileEvents(runsDir, "r1");
    expect(resumed.map((e) => e.seq)).toEqual(resumed.map((_, i) => i + 1));
    expect(resumed.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    expect(resumed.filter((e) => e.type === "checkpoint.saved").map((e) => (e.payload as { step: number }).step)).toEqual([1, 2, 3]);
    manager.close();
    events.close();
  });

  it("a run resumed before its end could be written says in its log how the attempt ended (no second run.finished)", async () => {
    let disk: ReturnType<typeof fillDisk> | null = null;
    const { events, manager, runsDir } = setup(fakeEngine({ onChat: (step) => step === 2 && (disk ??= fillDisk()) }));
    const spec = { run_id: "r1", workspace_id: "ws", kind: "train" as const, files: files(), resume: false };
    expect(await manager.start(spec)).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    const before = fileEvents(runsDir, "r1").length;
    disk!.mockRestore();
    // The web server recorded the failure from status() and resumes straight away.
    expect(await manager.start({ ...spec, resume: true, attempt: 2, last_seq: before })).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    const log = fileEvents(runsDir, "r1");
    expect(log[before]).toMatchObject({ seq: before + 1, type: "run.log", payload: { level: "error", message: expect.stringMatching(/^the previous attempt failed: disk full on runner gpu-test/) } });
    expect(log[before + 1]).toMatchObject({ type: "run.started" });
    expect(log.filter((e) => e.type === "run.finished")).toHaveLength(1);
    manager.close();
    events.close();
  });
});

describe("a checkpoint the engine cannot save", () => {
  it("fails the run with the reason, with no checkpoint.saved for that step, and refuses new runs while the disk is full", async () => {
    let full = true; // until the test frees it
    const engine = fakeEngine({
      trainLine: (step) => (step === 2 && full ? { type: "error", message: "disk full: checkpoint 0002 of run r1 could not be saved (No space left on device); nothing was saved" } : null),
    });
    const { events, manager, runsDir } = setup(engine);
    const spec = { run_id: "r1", workspace_id: "ws", kind: "train" as const, files: files(), resume: false };
    expect(await manager.start(spec)).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    const log = fileEvents(runsDir, "r1");
    expect(log.at(-1)).toMatchObject({
      type: "run.finished",
      payload: { status: "failed", error: expect.stringMatching(/^disk full on runner gpu-test: training step 2 failed: disk full: checkpoint 0002/) },
    });
    expect(log.filter((e) => e.type === "checkpoint.saved").map((e) => (e.payload as { step: number }).step)).toEqual([1]);
    expect(manager.status().disk_error).toBe("disk full on runner gpu-test: the engine could not save a checkpoint");
    const disk = fillDisk();
    expect(await manager.start({ ...spec, run_id: "r2" })).toMatchObject({ ok: false, error: expect.stringMatching(/^disk full on runner gpu-test/) });
    disk.mockRestore();
    full = false;
    expect(await manager.start({ ...spec, resume: true, attempt: 2, last_seq: log.length })).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    expect(events.events("r1").at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    manager.close();
    events.close();
  });
});

describe("a resume the runner's log cannot continue", () => {
  it("is refused when the web server stored more events than the runner's log holds, naming both", async () => {
    const { events, manager } = setup(fakeEngine());
    const spec = { run_id: "r1", workspace_id: "ws", kind: "train" as const, files: files({ num_steps: 1 }), resume: false };
    expect(await manager.start(spec)).toMatchObject({ ok: true });
    await manager.waitFor("r1");
    const have = events.lastSeq("r1");
    const res = await manager.start({ ...spec, resume: true, last_seq: have + 5 });
    expect(res).toMatchObject({ ok: false, error: expect.stringMatching(new RegExp(`stored events up to seq ${have + 5} but this runner's event log ends at seq ${have}`)) });
    expect(events.lastSeq("r1")).toBe(have); // nothing appended
    // A runner that lost the run's whole folder is refused too (it would number from 1).
    const lost = await manager.start({ ...spec, run_id: "gone", resume: true, last_seq: 40 });
    expect(lost).toMatchObject({ ok: false, error: expect.stringMatching(/up to seq 40 but this runner's event log ends at seq 0/) });
    manager.close();
    events.close();
  });
});
