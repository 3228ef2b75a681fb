import { describe, expect, it } from "vitest";
import { debiasedEma } from "./ema";

describe("debiasedEma", () => {
  it("starts at the first value (debiased, not pulled toward 0)", () => {
    expect(debiasedEma([5, 5, 5], 0.9)).toEqual([5, 5, 5].map(() => expect.closeTo(5, 10) as unknown as number));
  });

  it("follows the recurrence last·w + (1−w)·v divided by 1 − w^k", () => {
    const w = 0.6;
    const out = debiasedEma([1, 3, 2], w);
    const l1 = 0.4 * 1;
    const l2 = l1 * w + 0.4 * 3;
    const l3 = l2 * w + 0.4 * 2;
    expect(out[0]).toBeCloseTo(l1 / (1 - w), 12);
    expect(out[1]).toBeCloseTo(l2 / (1 - w ** 2), 12);
    expect(out[2]).toBeCloseTo(l3 / (1 - w ** 3), 12);
  });

  it("smooths a noisy series toward its mean and damps a spike", () => {
    const ys: number[] = Array.from({ length: 200 }, (_, i) => (i % 2 ? 1 : 0));
    ys[150] = 50;
    const out = debiasedEma(ys, 0.95) as number[];
    expect(out[140]).toBeGreaterThan(0.4);
    expect(out[140]).toBeLessThan(0.6);
    expect(out[150]).toBeLessThan(4);
  });

  it("keeps gaps as gaps without advancing, and weight 0 is the identity", () => {
    const out = debiasedEma([2, null, Number.NaN, 4], 0.5);
    expect(out[1]).toBeNull();
    expect(out[2]).toBeNull();
    // two values seen: (0.5·(0.5·2) + 0.5·4) / (1 − 0.25)
    expect(out[3]).toBeCloseTo((0.5 * 1 + 2) / 0.75, 12);
    expect(debiasedEma([1, null, 3], 0)).toEqual([1, null, 3]);
  });

  it("refuses a weight outside [0, 1)", () => {
    expect(() => debiasedEma([1], 1)).toThrow(/smoothing/);
    expect(() => debiasedEma([1], -0.1)).toThrow(/smoothing/);
  });
});
