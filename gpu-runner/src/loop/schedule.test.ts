import { describe, expect, it } from "vitest";
import { deriveSeed, seededShuffle } from "../rollout/seed";
import { epochOrder, tasksForStep } from "./schedule";

describe("seeded shuffle and epochs", () => {
  it("is deterministic for a seed and a permutation of the input", () => {
    const items = Array.from({ length: 20 }, (_, i) => i);
    const a = seededShuffle(items, 7);
    expect(seededShuffle(items, 7)).toEqual(a);
    expect([...a].sort((x, y) => x - y)).toEqual(items);
    expect(seededShuffle(items, 8)).not.toEqual(a);
  });

  it("derives distinct, stable, non-negative 31-bit seeds", () => {
    const s = deriveSeed(42, "run", 1, 0, 0);
    expect(deriveSeed(42, "run", 1, 0, 0)).toBe(s);
    expect(s).toBeGreaterThanOrEqual(0);
    expect(s).toBeLessThan(2 ** 31);
    const seen = new Set<number>();
    for (let g = 0; g < 50; g++) for (let r = 0; r < 20; r++) seen.add(deriveSeed(42, "run", 1, g, r));
    expect(seen.size).toBe(1000);
  });

  it("visits every task exactly once per epoch, reshuffling each epoch", () => {
    const n = 12;
    const G = 4;
    const steps = 9; // 36 slots = 3 epochs
    const slots = Array.from({ length: steps }, (_, s) => tasksForStep(s + 1, G, n, 42)).flat();
    for (let e = 0; e < 3; e++) {
      const epoch = slots.slice(e * n, (e + 1) * n);
      expect(epoch.every((x) => x.epoch === e)).toBe(true);
      expect(epoch.map((x) => x.taskIndex).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i));
      expect(epoch.map((x) => x.taskIndex)).toEqual(epochOrder(n, 42, e));
    }
    expect(epochOrder(n, 42, 0)).not.toEqual(epochOrder(n, 42, 1));
  });

  it("gives a resumed run the same tasks as an uninterrupted one, with an epoch boundary inside a step", () => {
    const n = 5;
    const G = 3; // step 2 covers slots 3,4 (epoch 0) and 5 (epoch 1)
    const uninterrupted = Array.from({ length: 6 }, (_, s) => tasksForStep(s + 1, G, n, 9));
    // "resume" after step 3: compute steps 4..6 fresh
    const resumed = [4, 5, 6].map((s) => tasksForStep(s, G, n, 9));
    expect(resumed).toEqual(uninterrupted.slice(3));
    expect(uninterrupted[1]!.map((g) => g.epoch)).toEqual([0, 0, 1]);
    expect(() => tasksForStep(0, G, n, 9)).toThrow();
  });
});
