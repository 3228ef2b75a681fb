import { describe, expect, it } from "vitest";
import type { RunEvent, StepMetrics, Trajectory } from "@contracts";
import { applyEvents, rolloutAdvantage, initialRunState, isTerminal, isWholeRollout, meanStd, runReducer, type PageEvent, type RunViewState } from "./run-state";
import { summariseTrajectory } from "../rollout-summary";

const RUN = "run_1";

function traj(id: string, step: number, group: number, reward: number | null, extra: Partial<Trajectory> = {}): Trajectory {
  return {
    id,
    step,
    group,
    task_index: group,
    split: "train",
    task: { word: "apple" },
    messages: [
      { role: "user", content: "say apple" },
      { role: "assistant", content: "apple" },
    ],
    reward,
    metrics: {},
    error: reward === null ? { kind: "thrown", message: "boom" } : null,
    model: "m",
    tokens: { prompt: 10, completion: 2 },
    timings: { started_at: 0, duration_ms: 5, model_ms: 3 },
    logs: [],
    ...extra,
  };
}

function stepMetrics(step: number, reward_mean: number): StepMetrics {
  return {
    step,
    reward_mean,
    reward_std_within_group: 0.1,
    exception_rate: 0,
    judge_tokens: 0,
    judge_cost_usd: 0,
    groups_trainable: 1,
    rollouts: 4,
    rollout_s: 1,
    train_s: 1,
    step_s: 2,
    tokens_per_s: 100,
    trainer: null,
  };
}

/** A small but complete run log: start, 2 groups × 2 rollouts, a log line, a step, an eval, finish. */
function runLog(): RunEvent[] {
  const base = { run_id: RUN, ts: 1000 };
  return [
    {
      ...base,
      seq: 1,
      type: "run.started",
      payload: { kind: "train", config: {} as never, model: "m", resumed_from_step: 0 },
    },
    { ...base, seq: 2, type: "rollout.finished", payload: traj("a", 1, 0, 1) },
    { ...base, seq: 3, type: "rollout.finished", payload: traj("b", 1, 0, 0) },
    { ...base, seq: 4, type: "run.log", payload: { level: "info", message: "hello" } },
    { ...base, seq: 5, type: "rollout.finished", payload: traj("c", 1, 1, 0.5) },
    { ...base, seq: 6, type: "rollout.finished", payload: traj("d", 1, 1, null) },
    { ...base, seq: 7, type: "train.progress", payload: { step: 1, micro_batch: 1, micro_batches: 2, loss: 0.3 } },
    { ...base, seq: 8, type: "train.progress", payload: { step: 1, micro_batch: 2, micro_batches: 2, loss: 0.2 } },
    { ...base, seq: 9, type: "step.finished", payload: stepMetrics(1, 0.5) },
    { ...base, seq: 10, type: "checkpoint.saved", payload: { step: 1, path: "/x/0001", size_bytes: 10 } },
    {
      ...base,
      seq: 11,
      type: "eval.finished",
      payload: { step: 1, model: "run_1@1", reward_mean: 0.7, reward_std: 0.1, exception_rate: 0, rollouts: 4, judge_tokens: 0, judge_cost_usd: 0 },
    },
    { ...base, seq: 12, type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } },
  ];
}

/** What matters about a state, without the Set (toEqual compares Sets fine, but this reads better). */
function view(s: RunViewState) {
  return { ...s, seen: [...s.seen].sort((a, b) => a - b) };
}

describe("run-state reducer", () => {
  it("folds a complete log", () => {
    const s = applyEvents(initialRunState, runLog());
    expect(s.status).toBe("completed");
    expect(s.maxSeq).toBe(12);
    expect(s.contiguousSeq).toBe(12);
    expect(s.rollouts.map((r) => r.id)).toEqual(["a", "b", "c", "d"]);
    expect(s.errorCount).toBe(1);
    expect(s.logs).toEqual([{ seq: 4, ts: 1000, level: "info", message: "hello" }]);
    expect(s.steps.map((x) => x.step)).toEqual([1]);
    expect(s.evals).toHaveLength(1);
    expect(s.checkpoints).toHaveLength(1);
    expect(s.trainProgress?.micro_batch).toBe(2);
    expect(s.started?.model).toBe("m");
    expect(s.finished?.status).toBe("completed");
  });

  it("groups rollouts by step and group with mean, std and advantages", () => {
    const s = applyEvents(initialRunState, runLog());
    expect(s.groupList.map((g) => g.key)).toEqual(["train:1:0", "train:1:1"]);
    const g0 = s.groups["train:1:0"]!;
    expect(g0.rolloutIds).toEqual(["a", "b"]);
    expect(g0.rewardMean).toBeCloseTo(0.5);
    expect(g0.rewardStd).toBeCloseTo(0.5);
    // Both advantages (contracts/signals.ts): reward − group mean, and the one the trainer used.
    expect(rolloutAdvantage("a", g0, true).raw).toBeCloseTo(0.5);
    expect(rolloutAdvantage("b", g0, true).raw).toBeCloseTo(-0.5);
    expect(rolloutAdvantage("a", g0, true).trained).toBeCloseTo(0.5 / (0.5 + 1e-6), 12);
    expect(rolloutAdvantage("a", g0, false).trained).toBeCloseTo(0.5, 12);
    // A failed rollout has no reward and does not count towards its group's mean.
    const g1 = s.groups["train:1:1"]!;
    expect(g1.rewardMean).toBeCloseTo(0.5);
    expect(g1.rewardStd).toBe(0);
    expect(g1.errorCount).toBe(1);
    // …and with one submitted rollout left the group does not reach the trainer: no advantage at all.
    for (const id of g1.rolloutIds) expect(rolloutAdvantage(id, g1, true)).toEqual({ raw: null, trained: null });
  });

  it("ignores duplicates, whether in one batch or re-sent later", () => {
    const log = runLog();
    const once = applyEvents(initialRunState, log);
    const twice = applyEvents(applyEvents(initialRunState, [...log, ...log]), log.slice(3, 8));
    expect(view(twice)).toEqual(view(once));
    expect(applyEvents(once, log)).toBe(once);
  });

  it("gives the same state for any order and batching", () => {
    const log = runLog();
    const expected = view(applyEvents(initialRunState, log));
    const reversed = [...log].reverse().reduce((s, e) => applyEvents(s, [e]), initialRunState);
    expect(view(reversed)).toEqual(expected);
    // A deterministic shuffle, applied in uneven batches.
    const shuffled = [...log].sort((a, b) => ((a.seq * 7) % 12) - ((b.seq * 7) % 12));
    let s = initialRunState;
    for (let i = 0; i < shuffled.length; i += 5) s = applyEvents(s, shuffled.slice(i, i + 5));
    expect(view(s)).toEqual(expected);
  });

  it("tracks the gap-free resume point separately from the highest seq", () => {
    const log = runLog();
    const s = applyEvents(initialRunState, [log[0]!, log[1]!, log[4]!, log[5]!]);
    expect(s.maxSeq).toBe(6);
    expect(s.contiguousSeq).toBe(2);
    const filled = applyEvents(s, [log[2]!, log[3]!]);
    expect(filled.contiguousSeq).toBe(6);
  });

  it("does not move status backwards, and run.finished is final", () => {
    let s = runReducer(initialRunState, { type: "status", status: "queued" });
    expect(s.status).toBe("queued");
    s = runReducer(s, { type: "events", events: runLog().slice(0, 2) });
    expect(s.status).toBe("running");
    s = runReducer(s, { type: "status", status: "queued" });
    expect(s.status).toBe("running");
    s = runReducer(s, { type: "events", events: runLog().slice(-1) });
    expect(s.status).toBe("completed");
    expect(isTerminal(s.status)).toBe(true);
    // A replayed run.started (same seq) does not reopen a finished run, nor does a stale status.
    s = runReducer(s, { type: "events", events: [runLog()[0]!] });
    expect(s.status).toBe("completed");
    s = runReducer(s, { type: "status", status: "running" });
    expect(s.status).toBe("completed");
  });

  it("reopens a run resumed after it stopped (a newer run.started), in any order", () => {
    const base = { run_id: RUN, ts: 1000 };
    const log: RunEvent[] = [
      ...runLog().slice(0, 3),
      { ...base, seq: 4, type: "run.finished", payload: { status: "stopped", error: null, diagnostics: [] } },
      { ...base, seq: 5, type: "run.started", payload: { kind: "train", config: {} as never, model: "m", resumed_from_step: 1 } },
      { ...base, seq: 6, type: "rollout.finished", payload: traj("e", 2, 0, 1) },
    ];
    const live = applyEvents(initialRunState, log);
    expect(live.status).toBe("running");
    expect(live.finished).toBeNull();
    expect(live.started?.resumed_from_step).toBe(0); // the first start is kept
    const reversed = applyEvents(initialRunState, [...log].reverse());
    expect(reversed.status).toBe("running");

    const done = applyEvents(live, [
      { ...base, seq: 7, type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } },
    ]);
    expect(done.status).toBe("completed");
    expect(done.finished?.status).toBe("completed");
  });

  it("keeps the later copy of a re-emitted trajectory and regroups it", () => {
    const base = { run_id: RUN, ts: 1 };
    const s = applyEvents(initialRunState, [
      { ...base, seq: 1, type: "rollout.finished", payload: traj("a", 0, 0, 0) },
      { ...base, seq: 2, type: "rollout.finished", payload: traj("a", 0, 0, 1) },
    ]);
    expect(s.rollouts).toHaveLength(1);
    expect(s.rollouts[0]!.reward).toBe(1);
    expect(s.groups["train:0:0"]!.rolloutIds).toEqual(["a"]);
  });

  it("does not mutate the previous state", () => {
    const log = runLog();
    const a = applyEvents(initialRunState, log.slice(0, 3));
    const snapshot = JSON.stringify(view(a));
    applyEvents(a, log.slice(3));
    expect(JSON.stringify(view(a))).toBe(snapshot);
    expect(initialRunState.seen.size).toBe(0);
  });

  it("computes mean and population std", () => {
    expect(meanStd([])).toBeNull();
    expect(meanStd([1, 3])).toEqual({ mean: 2, std: 1 });
  });
});

describe("honest state", () => {
  const ev = (seq: number, type: RunEvent["type"], payload: unknown) => ({ run_id: RUN, ts: 1000 + seq, seq, type, payload }) as RunEvent;
  const started = (seq: number, resumed: number) => ev(seq, "run.started", { kind: "train", config: {} as never, model: "m", resumed_from_step: resumed });

  it("lost ↔ running follow the server's status both ways; stored events replayed meanwhile do not end 'lost'", () => {
    let s = applyEvents(initialRunState, [started(1, 0), ev(2, "rollout.finished", traj("a", 1, 0, 1))]);
    expect(s.status).toBe("running");
    s = runReducer(s, { type: "status", status: "lost" });
    expect(s.status).toBe("lost");
    expect(isTerminal(s.status)).toBe(false);
    // Events from the stored page (already there before the runner stopped answering).
    s = applyEvents(s, [ev(3, "rollout.finished", traj("b", 1, 0, 0))]);
    expect(s.status).toBe("lost");
    // A late "queued" never moves it back; the server's "running" does.
    expect(runReducer(s, { type: "status", status: "queued" }).status).toBe("lost");
    s = runReducer(s, { type: "status", status: "running" });
    expect(s.status).toBe("running");
    // Stopped while lost: terminal, and a later "lost" or "running" does not undo it.
    s = runReducer(runReducer(s, { type: "status", status: "lost" }), { type: "status", status: "stopped" });
    expect(s.status).toBe("stopped");
    expect(runReducer(s, { type: "status", status: "lost" }).status).toBe("stopped");
    expect(runReducer(s, { type: "status", status: "running" }).status).toBe("stopped");
  });

  it("a step redone after a resume is counted once (the later attempt wins), in any order and batching", () => {
    const log = [
      started(1, 0),
      ev(2, "rollout.finished", traj("s-1-0-0", 1, 0, 0.9)),
      ev(3, "rollout.finished", traj("s-1-0-1", 1, 0, null)), // the killed attempt: one failed
      ev(4, "run.finished", { status: "failed", error: "the runner restarted while this run was in progress", diagnostics: [] }),
      started(5, 0),
      ev(6, "rollout.finished", traj("s-1-0-0", 1, 0, 0)),
      ev(7, "rollout.finished", traj("s-1-0-1", 1, 0, 1)),
      ev(8, "rollout.finished", traj("s-1-1-0", 1, 1, 1)),
    ];
    const once = applyEvents(initialRunState, log);
    const reversed = [...log].reverse().reduce((s, e) => applyEvents(s, [e]), initialRunState);
    for (const s of [once, reversed]) {
      expect(s.rollouts.map((r) => [r.id, r.reward])).toEqual([
        ["s-1-0-0", 0],
        ["s-1-0-1", 1],
        ["s-1-1-0", 1],
      ]);
      expect(s.errorCount).toBe(0);
      expect(s.groups["train:1:0"]?.rewardMean).toBe(0.5);
      expect(s.status).toBe("running"); // resumed
    }
  });
});

describe("attempts (issue 17 finding 4): a resumed run reads running again; an older attempt never wins", () => {
  const ev = (seq: number, type: RunEvent["type"], payload: unknown, attempt?: number) =>
    ({ run_id: RUN, ts: 1000 + seq, seq, type, payload, ...(attempt ? { attempt } : {}) }) as RunEvent;
  const started = (seq: number, attempt: number) => ev(seq, "run.started", { kind: "train", config: {} as never, model: "m", resumed_from_step: 0 }, attempt);
  const finished = (seq: number, status: "failed" | "stopped" | "completed", attempt: number) =>
    ev(seq, "run.finished", { status, error: status === "failed" ? "boom" : null, diagnostics: [] }, attempt);

  it("a page holding 'failed' moves to running when the server says attempt 2 runs, before any event of it", () => {
    let s = applyEvents(initialRunState, [started(1, 1), ev(2, "rollout.finished", traj("a", 1, 0, 1), 1), finished(3, "failed", 1)]);
    s = runReducer(s, { type: "status", status: "failed", attempt: 1, lastSeq: 3 });
    expect(s.status).toBe("failed");
    expect(s.finished?.error).toBe("boom");
    s = runReducer(s, { type: "status", status: "running", attempt: 2, lastSeq: 3 });
    expect(s.status).toBe("running");
    expect(s.attempt).toBe(2);
    expect(s.finished).toBeNull();
    // A stale snapshot of attempt 1 (a poll that read before the resume) changes nothing.
    expect(runReducer(s, { type: "status", status: "failed", attempt: 1, lastSeq: 3 }).status).toBe("running");
  });

  it("a page holding a server 'stopped' (no run.finished logged) moves to running on attempt 2's events", () => {
    let s = applyEvents(initialRunState, [started(1, 1), ev(2, "rollout.finished", traj("a", 1, 0, 1), 1)]);
    s = runReducer(s, { type: "status", status: "stopped", attempt: 1, lastSeq: 2 });
    expect(s.status).toBe("stopped");
    s = applyEvents(s, [started(3, 2)]);
    expect(s.status).toBe("running");
  });

  it("the old attempt's late run.finished (ingested after the resume) does not end attempt 2, in any order", () => {
    const log = [started(1, 1), ev(2, "rollout.finished", traj("a", 1, 0, 1), 1), started(3, 2), ev(4, "rollout.finished", traj("b", 2, 0, 1), 2), finished(5, "stopped", 1)];
    const once = applyEvents(initialRunState, log);
    const reversed = [...log].reverse().reduce((s, e) => applyEvents(s, [e]), initialRunState);
    const server = runReducer(runReducer(initialRunState, { type: "status", status: "running", attempt: 2, lastSeq: 4 }), { type: "events", events: log });
    for (const s of [once, reversed, server]) {
      expect(s.status).toBe("running");
      expect(s.attempt).toBe(2);
      expect(s.finished).toBeNull();
    }
    // Attempt 2's own end is the final word.
    expect(applyEvents(once, [finished(6, "completed", 2)]).status).toBe("completed");
  });

  it("within one attempt a terminal snapshot is final and a stale 'running' snapshot does not reopen it", () => {
    let s = runReducer(initialRunState, { type: "status", status: "running", attempt: 3, lastSeq: 10 });
    s = runReducer(s, { type: "status", status: "stopped", attempt: 3, lastSeq: 10 });
    expect(runReducer(s, { type: "status", status: "running", attempt: 3, lastSeq: 12 }).status).toBe("stopped");
    expect(runReducer(s, { type: "status", status: "running", attempt: 4, lastSeq: 12 }).status).toBe("running");
  });
});

describe("summaries (the first load) and whole rollouts (live) fold alike", () => {
  it("a summary and the whole trajectory give the same list, groups and figures; only the whole one holds its messages", () => {
    const log = runLog();
    const summarised: PageEvent[] = log.map((e) => (e.type === "rollout.finished" ? { ...e, payload: summariseTrajectory(e.payload) } : e));
    const whole = applyEvents(initialRunState, log);
    const light = applyEvents(initialRunState, summarised);
    const strip = (s: RunViewState) => s.rollouts.map(({ messages: _m, logs: _l, output: _o, turns: _t, model: _x, ...r }) => r);
    expect(strip(light)).toEqual(strip(whole));
    expect(light.groupList).toEqual(whole.groupList);
    expect(light.errorCount).toBe(whole.errorCount);
    expect(whole.rollouts.every(isWholeRollout)).toBe(true);
    expect(light.rollouts.some(isWholeRollout)).toBe(false);
    expect(light.rollouts[0]!.reply).toBe("apple");
    // A live event re-delivering a rollout the first load summarised makes it whole (the later seq wins as before).
    const again = applyEvents(light, [{ ...log[1]!, seq: 99 } as RunEvent]);
    expect(isWholeRollout(again.rollouts.find((r) => r.id === "a")!)).toBe(true);
  });
});
