import { describe, expect, it } from "vitest";
import { MIN_HALF_SPAN, yRange } from "./y-range";

describe("yRange (charts scale to their data)", () => {
  it("a flat 0 is centred on a small span, not 0–100 (uPlot's default)", () => {
    expect(yRange(0, 0)).toEqual([-MIN_HALF_SPAN, MIN_HALF_SPAN]);
  });
  it("a loss near 1e-6 gets an axis near 1e-6", () => {
    const [lo, hi] = yRange(1e-6, 3e-6);
    expect(lo).toBeCloseTo(0.9e-6, 12);
    expect(hi).toBeCloseTo(3.1e-6, 12);
  });
  it("a flat non-zero value is centred with ±10% of it", () => {
    const [lo, hi] = yRange(0.5, 0.5);
    expect(lo).toBeCloseTo(0.45);
    expect(hi).toBeCloseTo(0.55);
    const [nlo, nhi] = yRange(-2, -2);
    expect(nlo).toBeCloseTo(-2.2);
    expect(nhi).toBeCloseTo(-1.8);
  });
  it("a flat tiny value keeps its own scale", () => {
    const [lo, hi] = yRange(2e-7, 2e-7);
    expect(lo).toBeCloseTo(1.8e-7, 14);
    expect(hi).toBeCloseTo(2.2e-7, 14);
  });
  it("data pads by 5% of its span; no data is 0–1", () => {
    expect(yRange(0, 10)).toEqual([-0.5, 10.5]);
    expect(yRange(null, null)).toEqual([0, 1]);
    expect(yRange(Number.NaN, 1)).toEqual([0, 1]);
  });
});
