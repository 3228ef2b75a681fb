/**
 * Each pathology rule on fixtures that must raise it and near-misses that must not.
 *   npx vitest run --project unit features/flags/server/detect/rules.test.ts
 */
import { describe, expect, it } from "vitest";
import { FLAG_THRESHOLDS as T } from "./config";
import { loadEnv } from "@/server/env";
import { evaluateFlags } from "./evaluate";
import { exceptionRate } from "./rules/exception-rate";
import { lengthDrift } from "./rules/length-drift";
import { rewardCollapse } from "./rules/reward-collapse";
import { rewardHacking } from "./rules/reward-hacking";
import { runnerFaults } from "./rules/runner-faults";
import { klBlowup, lowProbsCorr, nonfiniteLoss } from "./rules/trainer";
import type { RolloutInput, StepInput } from "./types";

type Trainer = NonNullable<StepInput["trainer"]>;
function step(n: number, o: Partial<Omit<StepInput, "trainer">> & { trainer?: Partial<Trainer> | null } = {}): StepInput {
  const { trainer, ...rest } = o;
  return {
    step: n,
    reward_mean: 0.5,
    reward_std_within_group: 0.2,
    exception_rate: 0,
    groups_trainable: 4,
    groups: 4,
    completion_tokens_mean: 12,
    trainer: trainer === null ? null : { loss: 0.1, grad_norm: 1, kl: 0.001, probs_corr: 0.99, skipped: false, ...trainer },
    ...rest,
  };
}
const history = (n: number, o: (i: number) => Parameters<typeof step>[1] = () => ({})) => Array.from({ length: n }, (_, i) => step(i, o(i)));

/** 4 groups × 4 rollouts at a step; reward(group, i) and metrics(group, i). */
function rollouts(s: number, reward: (g: number, i: number) => number | null, metrics: (g: number, i: number) => Record<string, number> = () => ({}), tokens = 12): RolloutInput[] {
  const out: RolloutInput[] = [];
  for (let g = 0; g < 4; g++)
    for (let i = 0; i < 4; i++) {
      const r = reward(g, i);
      out.push({ id: `r${s}-${g}-${i}`, step: s, group: g, reward: r, metrics: metrics(g, i), completion_tokens: tokens, failed: r === null });
    }
  return out;
}

describe("reward collapse", () => {
  // The default template's failure: from step 7 every rollout is a long sentence scoring 0.200.
  const collapsed = (i: number) => (i >= 7 ? { groups_trainable: 0, reward_std_within_group: 0, reward_mean: 0.2 } : {});

  it("flags zero-variance groups on 2 consecutive steps, critical, linking the constant rollouts", () => {
    const steps = history(9, collapsed);
    const rs = [...rollouts(7, () => 0.2), ...rollouts(8, () => 0.2)];
    const [f, ...rest] = rewardCollapse({ steps, rollouts: rs }, T);
    expect(rest).toEqual([]);
    expect(f).toMatchObject({ rule: "reward_collapse", severity: "critical", firstStep: 7, lastStep: 8, steps: [7, 8] });
    expect(f!.message).toContain("0.200");
    expect(f!.rolloutIds).toHaveLength(T.maxRolloutIds);
    expect(f!.rolloutIds.every((id) => /^r[78]-/.test(id))).toBe(true);
  });

  it("is not raised by one collapsed step (a chance tie), nor by half the groups trainable", () => {
    expect(rewardCollapse({ steps: history(8, collapsed), rollouts: [] }, T)).toEqual([]);
    expect(rewardCollapse({ steps: history(6, () => ({ groups_trainable: 2 })), rollouts: [] }, T)).toEqual([]);
  });

  it("a low but non-zero trainable share is a warning", () => {
    const [f] = rewardCollapse({ steps: history(4, (i) => (i >= 1 ? { groups_trainable: 1 } : {})), rollouts: [] }, T);
    expect(f).toMatchObject({ severity: "warning", firstStep: 1, lastStep: 3 });
  });
});

describe("converged, not collapsed", () => {
  // say-the-word at its end: the reward rose from ~0.15 to 1.000, and every group's 8 replies are the word.
  const steps = history(6, (i) => (i < 2 ? { reward_mean: 0.15 } : i >= 4 ? { groups_trainable: 0, reward_std_within_group: 0, reward_mean: 1 } : { reward_mean: 0.8 }));
  const rs = [...rollouts(0, (g, i) => (i === 0 ? 0.5 : 0.1)), ...rollouts(4, () => 1), ...rollouts(5, () => 1)];

  it("says converged (info) with what to do next, and raises no reward collapse", () => {
    const flags = rewardCollapse({ steps, rollouts: rs }, T);
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ rule: "converged", severity: "info", firstStep: 4, lastStep: 5 });
    expect(flags[0]!.message).toContain("Harder tasks");
  });

  it("is a collapse when the groups tie below the top the run reached (it learned, then lost it)", () => {
    const fell = [...rollouts(0, (g, i) => (i === 0 ? 0.5 : 0.1)), ...rollouts(2, (g, i) => (i === 0 ? 0.1 : 1)), ...rollouts(4, () => 0), ...rollouts(5, () => 0)];
    const flags = rewardCollapse({ steps, rollouts: fell }, T);
    expect(flags.map((f) => [f.rule, f.severity])).toEqual([["reward_collapse", "critical"]]);
  });

  it("is a collapse when the reward never moved (a check that always answers 0.2)", () => {
    const flat = history(4, (i) => ({ reward_mean: 0.2, ...(i >= 2 ? { groups_trainable: 0 } : {}) }));
    const flags = rewardCollapse({ steps: flat, rollouts: [0, 1, 2, 3].flatMap((s) => rollouts(s, () => 0.2)) }, T);
    expect(flags.map((f) => f.rule)).toEqual(["reward_collapse"]);
  });
});

describe("length drift", () => {
  it("flags completions that doubled from the first steps' length, linking the longest replies", () => {
    const steps = history(5, (i) => ({ completion_tokens_mean: i < 2 ? 10 : i === 4 ? 24 : 12 }));
    const rs = rollouts(4, () => 0.5, () => ({}), 24).map((r, i) => ({ ...r, completion_tokens: i }));
    const [f, ...rest] = lengthDrift({ steps, rollouts: rs }, T);
    expect(rest).toEqual([]);
    expect(f).toMatchObject({ rule: "length_drift", firstStep: 4, lastStep: 4 });
    expect(f!.rolloutIds[0]).toBe("r4-3-3"); // the longest
  });

  it("flags a collapse to very short replies", () => {
    expect(lengthDrift({ steps: history(4, (i) => ({ completion_tokens_mean: i < 2 ? 30 : 5 })), rollouts: [] }, T)).toHaveLength(1);
  });

  it("says info, not warning, when the length moved with the reward (say-the-word's replies shrink to the word)", () => {
    // Baseline: 20-token sentences scoring ~0.1; later 3-token replies scoring 1. Longer replies score less.
    const steps = history(5, (i) => (i < 2 ? { completion_tokens_mean: 20, reward_mean: 0.1 } : { completion_tokens_mean: 3, reward_mean: 0.95 }));
    const rs = [0, 1, 2, 3, 4].flatMap((s) =>
      rollouts(s, (g, i) => (s < 2 ? (i === 0 ? 0.5 : 0.05) : i === 0 ? 0.5 : 1), () => ({}), 0).map((r, k) => ({ ...r, completion_tokens: s < 2 ? (k % 4 === 0 ? 4 : 22) : k % 4 === 0 ? 6 : 3 })),
    );
    const flags = lengthDrift({ steps, rollouts: rs }, T);
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ rule: "length_drift", severity: "info" });
    expect(flags[0]!.message).toContain("with the reward");
  });

  it("warns when the length moved against the reward (longer replies, reward flat)", () => {
    const steps = history(5, (i) => ({ completion_tokens_mean: i < 2 ? 10 : 30, reward_mean: 0.5 }));
    const rs = [0, 1, 3, 4].flatMap((s) => rollouts(s, (g, i) => 0.3 + 0.1 * ((g + i) % 3), () => ({}), s < 2 ? 10 : 30));
    const flags = lengthDrift({ steps, rollouts: rs }, T);
    expect(flags).toHaveLength(1);
    expect(flags[0]).toMatchObject({ severity: "warning" });
    expect(flags[0]!.message).toContain("against the reward");
  });

  it("is not raised by growth under the ratio, or a doubling of a tiny length", () => {
    expect(lengthDrift({ steps: history(6, (i) => ({ completion_tokens_mean: i < 2 ? 10 : 19 })), rollouts: [] }, T)).toEqual([]);
    expect(lengthDrift({ steps: history(6, (i) => ({ completion_tokens_mean: i < 2 ? 2 : 6 })), rollouts: [] }, T)).toEqual([]);
  });
});

describe("reward hacking", () => {
  // reward = 0.5·format + 0.5·correct at first; later "format" alone drives it while "correct" falls.
  const base = (s: number) => rollouts(s, (g, i) => 0.5 * ((g + i) % 2) + 0.5 * (i % 3 === 0 ? 1 : 0), (g, i) => ({ format: (g + i) % 2, correct: i % 3 === 0 ? 1 : 0 }));
  const hacked = (s: number) => rollouts(s, (g, i) => (i === 0 ? 0 : 0.9), (g, i) => ({ format: i === 0 ? 0 : 1.8, correct: 0 }));

  it("flags one component dominating and rising while another contributor falls", () => {
    const rs = [0, 1, 2].flatMap(base).concat([3, 4, 5].flatMap(hacked));
    const [f, ...rest] = rewardHacking({ steps: [], rollouts: rs }, T);
    expect(rest).toEqual([]);
    expect(f).toMatchObject({ rule: "reward_hacking", lastStep: 5 });
    expect(f!.message).toContain('"format"');
    expect(f!.message).toContain('"correct"');
    expect(f!.rolloutIds.every((id) => id.startsWith("r5-"))).toBe(true);
  });

  it("flags a rare component the reward pays for falling to nothing while a length bonus takes over (the corpus' length-hack)", () => {
    // reward = 0.3·exact + 0.7·length: at first 1 reply in 16 is exactly the word; later all are long.
    const start = (s: number) =>
      rollouts(s, (g, i) => (g === 0 && i === 0 ? 0.3 + 0.7 / 16 : (0.7 * (3 + ((g * 4 + i) % 9))) / 16), (g, i) =>
        g === 0 && i === 0 ? { exact: 1, length: 1 / 16, turns: 1 } : { exact: 0, length: (3 + ((g * 4 + i) % 9)) / 16, turns: 1 });
    // (turns: the runner's own metric, constant in a one-turn scenario: it must not break the fit)
    const long = (s: number) => rollouts(s, (g, i) => (0.7 * (12 + (i % 4))) / 16, (g, i) => ({ exact: 0, length: (12 + (i % 4)) / 16, turns: 1 }));
    const flags = rewardHacking({ steps: [], rollouts: [0, 1, 2].flatMap(start).concat([3, 4, 5].flatMap(long)) }, T);
    expect(flags.map((f) => f.rule)).toEqual(["reward_hacking"]);
    expect(flags[0]!.message).toContain('"length"');
    expect(flags[0]!.message).toContain('"exact"');
  });

  it("is not raised when every contributing component rises (healthy learning), nor with too few steps", () => {
    const better = (s: number) => rollouts(s, (g, i) => 0.5 * (i === 0 ? 0 : 1) + 0.5 * (i === 0 ? 0 : 1), (g, i) => ({ format: i === 0 ? 0 : 1, correct: i === 0 ? 0 : 1 }));
    expect(rewardHacking({ steps: [], rollouts: [0, 1, 2].flatMap(base).concat([3, 4, 5].flatMap(better)) }, T)).toEqual([]);
    expect(rewardHacking({ steps: [], rollouts: [0, 1, 2].flatMap(base).concat([3, 4].flatMap(hacked)) }, T)).toEqual([]);
  });
});

describe("trainer rules", () => {
  it("probs_corr below the threshold on a trained step; a skipped step (probs_corr 0) is not", () => {
    const [f] = lowProbsCorr({ steps: history(4, (i) => (i === 2 ? { trainer: { probs_corr: 0.7 } } : {})), rollouts: [] }, T);
    expect(f).toMatchObject({ rule: "low_probs_corr", steps: [2], severity: "warning" });
    expect(lowProbsCorr({ steps: history(4, (i) => (i === 2 ? { trainer: { probs_corr: 0, skipped: true } } : { trainer: { probs_corr: 0.91 } })), rollouts: [] }, T)).toEqual([]);
  });

  it("KL above the limit, or 10× the run's median", () => {
    expect(klBlowup({ steps: history(4, (i) => (i === 3 ? { trainer: { kl: 2.5 } } : {})), rollouts: [] }, T)[0]).toMatchObject({ severity: "critical", steps: [3] });
    const jump = klBlowup({ steps: history(5, (i) => ({ trainer: { kl: i === 4 ? 0.5 : 0.02 } })), rollouts: [] }, T);
    expect(jump[0]).toMatchObject({ severity: "warning", steps: [4] });
    // Near-miss: 5× a median, and a jump from a median below the floor.
    expect(klBlowup({ steps: history(5, (i) => ({ trainer: { kl: i === 4 ? 0.1 : 0.02 } })), rollouts: [] }, T)).toEqual([]);
    expect(klBlowup({ steps: history(5, (i) => ({ trainer: { kl: i === 4 ? 0.05 : 0.001 } })), rollouts: [] }, T)).toEqual([]);
  });

  it("a NaN/Inf (or missing) loss or grad norm; finite ones and steps without a trainer are not", () => {
    expect(nonfiniteLoss({ steps: history(3, (i) => (i === 1 ? { trainer: { loss: Number.NaN } } : {})), rollouts: [] })[0]).toMatchObject({ severity: "critical", steps: [1] });
    expect(nonfiniteLoss({ steps: history(3, (i) => (i === 2 ? { trainer: { grad_norm: null } } : {})), rollouts: [] })[0]).toMatchObject({ steps: [2] });
    expect(nonfiniteLoss({ steps: history(3, (i) => (i === 1 ? { trainer: null } : { trainer: { loss: 1e30 } })), rollouts: [] })).toEqual([]);
  });
});

describe("exception rate", () => {
  it("flags a rise above the baseline, linking the failed rollouts", () => {
    const rs = rollouts(3, (g, i) => (i < 2 ? null : 0.5));
    const [f] = exceptionRate({ steps: history(4, (i) => ({ exception_rate: i === 3 ? 0.5 : 0.05 })), rollouts: rs }, T);
    expect(f).toMatchObject({ rule: "exception_rate", severity: "critical", steps: [3] });
    expect(f!.message).toBe("50% of rollouts failed at step 3 (baseline 5%) on step 3.");
    expect(f!.rolloutIds).toHaveLength(8);
  });

  it("is not raised by a steady rate, or a rise too small", () => {
    expect(exceptionRate({ steps: history(6, () => ({ exception_rate: 0.2 })), rollouts: [] }, T)).toEqual([]);
    expect(exceptionRate({ steps: history(6, (i) => ({ exception_rate: i < 2 ? 0.2 : 0.3 })), rollouts: [] }, T)).toEqual([]);
  });
});

describe("the evaluator", () => {
  it("a healthy history raises nothing; a collapsed one raises exactly the collapse", () => {
    expect(evaluateFlags({ steps: history(10), rollouts: [] })).toEqual([]);
    const flags = evaluateFlags({ steps: history(9, (i) => (i >= 7 ? { groups_trainable: 0 } : {})).reverse(), rollouts: [] });
    expect(flags.map((f) => [f.rule, f.firstStep])).toEqual([["reward_collapse", 7]]);
  });

  it("STALL_AFTER_MS: default, override, and a clear error for nonsense", () => {
    expect(loadEnv({ NODE_ENV: "test" }).STALL_AFTER_MS).toBe(300_000);
    expect(loadEnv({ NODE_ENV: "test", STALL_AFTER_MS: "60000" }).STALL_AFTER_MS).toBe(60_000);
    expect(() => loadEnv({ NODE_ENV: "test", STALL_AFTER_MS: "soon" })).toThrow(/STALL_AFTER_MS/);
  });
});

describe("rollouts the runner lost", () => {
  // A healthy run on a loaded machine: 9 of 32 rollouts of step 1 starved (the runner's CPU, not the code).
  const steps = history(3, (i) => (i === 1 ? { exception_rate: 9 / 16 } : {}));
  const rs = [0, 1, 2].flatMap((s) => rollouts(s, () => 0.5)).map((r) => (r.step === 1 && Number(r.id.split("-")[2]) < 3 && r.group < 3 ? { ...r, failed: true, runner_fault: true, reward: null } : r));

  it("are not the experiment's exceptions", () => {
    expect(exceptionRate({ steps, rollouts: rs }, T)).toEqual([]);
    const own = rs.map((r) => (r.runner_fault ? { ...r, runner_fault: false } : r));
    expect(exceptionRate({ steps, rollouts: own }, T).map((f) => f.rule)).toEqual(["exception_rate"]);
  });

  it("are said (info), with their steps and rollouts", () => {
    const [f, ...rest] = runnerFaults({ steps, rollouts: rs }, T);
    expect(rest).toEqual([]);
    expect(f).toMatchObject({ rule: "runner_faults", severity: "info", steps: [1] });
    expect(f!.rolloutIds).toHaveLength(9);
    expect(f!.message).toContain("9 rollouts at step 1");
  });
});
