import { describe, expect, it } from "vitest";
import { StepMetrics, type Trajectory, type TrainMetrics } from "../../../contracts";
import { computeEvalMetrics, computeStepMetrics, isTrainableGroup, std } from "./metrics";

function traj(group: number, reward: number | null, completion = 10, error = false): Trajectory {
  return {
    id: `t${group}-${Math.random()}`,
    step: 1,
    group,
    task_index: group,
    split: "train",
    task: {},
    messages: [],
    reward: error ? null : reward,
    metrics: {},
    error: error ? { kind: "reward", message: "NaN" } : null,
    model: "m",
    tokens: { prompt: 5, completion },
    timings: { started_at: 0, duration_ms: 1, model_ms: 1 },
    logs: [],
  };
}

describe("step metrics", () => {
  it("computes reward mean, within-group std, exception rate, trainable groups and tokens/s", () => {
    const groups = [
      [traj(0, 1), traj(0, 0), traj(0, 1), traj(0, 0)], // std 0.5, trainable
      [traj(1, 0.5), traj(1, 0.5), traj(1, null, 10, true), traj(1, 0.5)], // std 0, not trainable
      [traj(2, 1), traj(2, null, 10, true), traj(2, null, 10, true), traj(2, null, 10, true)], // 1 valid
    ];
    const m = computeStepMetrics(3, groups, null, { rolloutS: 2, trainS: 0, stepS: 2.5 });
    expect(StepMetrics.safeParse(m).success).toBe(true);
    // valid rewards: 1,0,1,0,0.5,0.5,0.5,1 → mean 4.5/8
    expect(m.reward_mean).toBeCloseTo(4.5 / 8);
    // groups with ≥2 valid: std 0.5 and 0 → mean 0.25
    expect(m.reward_std_within_group).toBeCloseTo(0.25);
    expect(m.exception_rate).toBeCloseTo(4 / 12);
    expect(m.groups_trainable).toBe(1);
    expect(m.rollouts).toBe(12);
    expect(m.tokens_per_s).toBeCloseTo(120 / 2);
    expect(isTrainableGroup(groups[0]!)).toBe(true);
    expect(isTrainableGroup(groups[1]!)).toBe(false);
    expect(isTrainableGroup(groups[2]!)).toBe(false);
  });

  it("takes groups_trainable from the trainer when it trained, and is null-safe with no valid rollouts", () => {
    const trainer: TrainMetrics = {
      loss: 0.1, grad_norm: 1, kl: 0, clip_fraction: 0, entropy: 1, probs_corr: 0.99, trained_tokens: 10,
      groups_submitted: 2, groups_trainable: 2, skipped: false, duration_s: 1,
    };
    const withTrainer = computeStepMetrics(1, [[traj(0, 1), traj(0, 0)]], trainer, { rolloutS: 1, trainS: 1, stepS: 2 });
    expect(withTrainer.groups_trainable).toBe(2);
    expect(withTrainer.trainer).toEqual(trainer);
    const none = computeStepMetrics(1, [[traj(0, null, 0, true)]], null, { rolloutS: 0, trainS: 0, stepS: 0 });
    expect(none.reward_mean).toBeNull();
    expect(none.reward_std_within_group).toBeNull();
    expect(none.exception_rate).toBe(1);
    // No rollout time, no rate: tokens/s over 0 s (or an unmeasured time: an ART client's step) is unknown, not 0.
    expect(none.tokens_per_s).toBeNull();
    const unmeasured = computeStepMetrics(1, [[traj(0, 1), traj(0, 0)]], null, { rolloutS: null, trainS: null, stepS: null });
    expect(unmeasured).toMatchObject({ rollout_s: null, train_s: null, step_s: null, tokens_per_s: null });
    expect(withTrainer.tokens_per_s).toBeGreaterThan(0);
  });

  it("eval metrics: population std over valid rollouts", () => {
    const m = computeEvalMetrics(4, "r@4", [traj(0, 1), traj(1, 0), traj(2, null, 1, true)]);
    expect(m).toMatchObject({ step: 4, model: "r@4", reward_mean: 0.5, reward_std: 0.5, rollouts: 3 });
    expect(m.exception_rate).toBeCloseTo(1 / 3);
    expect(std([2, 4, 4, 4, 5, 5, 7, 9])).toBe(2);
  });
});
