import { describe, expect, it } from "vitest";
import { groupAdvantages } from "./advantages";
import { groupRolloutAdvantages, latestTrainedStep, runRolloutAdvantages, withAdvantages, type AdvantageRollout } from "./signals";
import type { StepMetrics } from "./run";

const r = (id: string, reward: number | null, extra: Partial<AdvantageRollout> = {}): AdvantageRollout => ({
  id,
  split: "train",
  reward,
  error: reward === null ? { kind: "thrown", message: "x" } : null,
  tokens: { prompt: 5, completion: 3 },
  ...extra,
});

describe("one number, one definition (contracts/signals.ts)", () => {
  it("raw = reward − mean of the submitted rollouts; trained = the trainer's arithmetic", () => {
    const a = groupRolloutAdvantages([r("a", 1), r("b", 0), r("c", 0), r("d", null)], true);
    const trainer = groupAdvantages([1, 0, 0], true)!;
    expect(a.get("a")).toEqual({ raw: 1 - 1 / 3, trained: trainer[0] });
    expect(a.get("b")).toEqual({ raw: 0 - 1 / 3, trained: trainer[1] });
    expect(a.get("d")).toEqual({ raw: null, trained: null });
    expect(groupRolloutAdvantages([r("a", 1), r("b", 0)], false).get("a")).toEqual({ raw: 0.5, trained: 0.5 });
  });
  it("a tied group trained with 0; a group of one, an eval or a rollout without a model call did not train", () => {
    expect(groupRolloutAdvantages([r("a", 0.5), r("b", 0.5)], true).get("a")).toEqual({ raw: 0, trained: 0 });
    expect(groupRolloutAdvantages([r("a", 1), r("b", null)], true).get("a")).toEqual({ raw: null, trained: null });
    expect(groupRolloutAdvantages([r("a", 1, { split: "val" }), r("b", 0, { split: "val" })], true).get("a")).toEqual({ raw: null, trained: null });
    const noCall = groupRolloutAdvantages([r("a", 1), r("b", 0), r("c", 1, { tokens: { prompt: 0, completion: 0 } })], true);
    expect(noCall.get("a")!.raw).toBe(0.5);
    expect(noCall.get("c")).toEqual({ raw: null, trained: null });
  });
  it("a run's rollouts are grouped by split, step and group", () => {
    const all = [
      { ...r("a", 1), step: 1, group: 0 },
      { ...r("b", 0), step: 1, group: 1 },
      { ...r("c", 0), step: 1, group: 0 },
      { ...r("d", 1), step: 1, group: 1 },
    ];
    const m = runRolloutAdvantages(all, false);
    expect(m.get("a")!.raw).toBe(0.5);
    expect(m.get("b")!.raw).toBe(-0.5);
    expect(withAdvantages({ id: "a" }, m.get("a")!)).toEqual({ id: "a", advantage: 0.5, trained_advantage: 0.5 });
  });
  it("the live line's loss is the newest trained step's trainer.loss", () => {
    const step = (n: number, loss: number | null) => ({ step: n, trainer: loss === null ? null : { loss, kl: 0.01 } }) as unknown as StepMetrics;
    expect(latestTrainedStep([step(1, 2e-6), step(2, -1e-6), step(3, null)])).toEqual({ step: 2, loss: -1e-6, kl: 0.01 });
    expect(latestTrainedStep([step(1, null)])).toBeNull();
  });
});
