/**
 * validation_fell on real-shaped eval series (the runs of issue 31: say-the-word's healthy curves, the
 * multi-turn game's fall to 0), through evaluateFlags so the registration is what is tested.
 *   npx vitest run --project unit features/flags/server/detect/validation-fell.test.ts
 */
import { describe, expect, it } from "vitest";
import { FLAG_THRESHOLDS as T } from "./config";
import { evaluateFlags } from "./evaluate";
import type { EvalInput, Flag } from "./types";

/** Evals at steps 4, 8, 12…, one reward each (the default eval_every 4). */
const series = (...rewards: number[]): EvalInput[] => rewards.map((reward, i) => ({ step: (i + 1) * 4, reward, rolloutIds: [`val-${(i + 1) * 4}-a`, `val-${(i + 1) * 4}-b`] }));
const fellFlags = (evals: EvalInput[]): Flag[] => evaluateFlags({ steps: [], rollouts: [], evals, runNumber: 7 }).filter((f) => f.rule === "validation_fell");

describe("validation fell from its best", () => {
  it("fires on the multi-turn game's fall (0.75 at step 4, then 0.00), naming the best step, reward and 7@best", () => {
    const [f, ...rest] = fellFlags(series(0.75, 0.25, 0));
    expect(rest).toEqual([]);
    expect(f).toMatchObject({ rule: "validation_fell", severity: "warning", firstStep: 8, lastStep: 12, steps: [8, 12] });
    expect(f!.message).toContain("0.750 at step 4");
    expect(f!.message).toContain("0 at step 12");
    expect(f!.message).toContain('"7@best"');
    // The latest eval's validation rollouts first.
    expect(f!.rolloutIds.slice(0, 2)).toEqual(["val-12-a", "val-12-b"]);
  });

  it("fires on seed 42's curve (best 0.57 at step 8, 0.00 at the last step)", () => {
    const evals: EvalInput[] = [{ step: 4, reward: 0.29 }, { step: 8, reward: 0.57 }, { step: 12, reward: 0 }];
    const [f] = fellFlags(evals);
    expect(f).toMatchObject({ firstStep: 12, lastStep: 12 });
    expect(f!.message).toContain("0.570 at step 8");
  });

  it("does not fire on a healthy plateau (0.875, 0.875, 0.85), a rise, or one validation task flipping", () => {
    expect(fellFlags(series(0.875, 0.875, 0.85))).toEqual([]);
    expect(fellFlags(series(0.27, 0.5, 0.75, 0.88))).toEqual([]);
    expect(fellFlags(series(0.875, 0.75))).toEqual([]); // 1 of 8 tasks: under validationFallAbsolute
    expect(fellFlags(series(0.9, 0.7))).toEqual([]); // 0.2 down but 78% of the best kept: over validationFallRatio
    expect(fellFlags([])).toEqual([]);
    expect(fellFlags(series(0.5))).toEqual([]);
  });

  it("needs both thresholds: a big absolute fall that keeps most of the best, or a small one from a small best, is not raised", () => {
    expect(T.validationFallAbsolute).toBeGreaterThan(0.125); // one task of an 8-task split
    expect(fellFlags(series(0.25, 0.1))).toEqual([]); // 0.15 down: under the absolute threshold
    expect(fellFlags(series(0.25, 0.05))).toHaveLength(1);
  });

  it("raises nothing once validation recovers, and ties keep the earliest best", () => {
    expect(fellFlags(series(0.75, 0.25, 0.75))).toEqual([]);
    const [f] = fellFlags(series(0.75, 0.75, 0));
    expect(f!.message).toContain("at step 4");
    expect(f!.message).toContain("The step 4 checkpoint");
  });

  it("is the same flag on re-evaluation (same firstStep), growing while validation stays down", () => {
    const a = fellFlags(series(0.75, 0.25));
    const b = fellFlags(series(0.75, 0.25, 0.0));
    expect(a[0]!.firstStep).toBe(b[0]!.firstStep);
    expect(b[0]!.steps).toEqual([8, 12]);
  });
});
