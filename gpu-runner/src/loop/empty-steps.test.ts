import { describe, expect, it } from "vitest";
import type { Trajectory } from "../../../contracts";
import { EmptyStepGuard } from "./empty-steps";

const t = (reward: number | null, error: string | null = null): Trajectory =>
  ({
    id: Math.random().toString(36),
    step: 1,
    group: 0,
    task_index: 0,
    split: "train",
    task: {},
    messages: [],
    reward: error ? null : reward,
    metrics: {},
    error: error ? { kind: "timeout", message: error } : null,
    model: "m",
    tokens: { prompt: 0, completion: 0 },
    timings: { started_at: 0, duration_ms: 0, model_ms: 0 },
    logs: [],
  }) as Trajectory;

const failing = () => [[t(null, "rollout timed out"), t(null, "rollout timed out")], [t(null, "rollout timed out"), t(null, "boom")]];
const limits = { fail_after_empty_steps: 2, empty_step_exception_rate: 0.9 };

describe("EmptyStepGuard", () => {
  it("stops after two empty steps in a row, naming them, the rate and the most frequent error", () => {
    const guard = new EmptyStepGuard(limits);
    expect(guard.check(3, failing())).toBeNull();
    expect(guard.check(4, failing())).toBe(
      "steps 3–4 had nothing to train on: no group with two valid rollouts of different rewards, and 100% of step 4's 4 rollouts failed " +
        "(most often, 3×: timeout: rollout timed out). Stopped before training on nothing (limits.fail_after_empty_steps 2); fix the cause and Resume.",
    );
  });

  it("a step with something to learn from breaks the streak; tied valid rewards (collapse) or few failures are not empty", () => {
    const guard = new EmptyStepGuard(limits);
    expect(guard.check(1, failing())).toBeNull();
    expect(guard.check(2, [[t(0), t(1)], [t(null, "x"), t(null, "x")]])).toBeNull(); // one trainable group
    expect(guard.check(3, failing())).toBeNull();
    expect(guard.check(4, [[t(0), t(0)], [t(0), t(0)]])).toBeNull(); // all tied, none failed: not this rule's
    expect(guard.check(5, failing())).toBeNull();
    expect(guard.check(6, failing())).not.toBeNull();
  });

  it("0 turns it off", () => {
    const guard = new EmptyStepGuard({ ...limits, fail_after_empty_steps: 0 });
    for (let s = 1; s < 10; s++) expect(guard.check(s, failing())).toBeNull();
  });
});
