import { describe, expect, it } from "vitest";
import { m4Indices, m4UnionIndices } from "./series-m4";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("m4Indices", () => {
  it("returns a series no longer than width whole, skipping only nulls", () => {
    const ys = [3, null, 1, 4, 1, 5];
    expect(m4Indices(range(6), ys, 6)).toEqual([0, 2, 3, 4, 5]);
    expect(m4Indices(range(6), ys, 800)).toEqual([0, 2, 3, 4, 5]);
  });

  it("keeps at most 4 points per bucket: ≤ 4 × width for 100,000 points", () => {
    const n = 100_000;
    const ys = range(n).map((i) => Math.sin(i / 50) + (i % 7) / 10);
    const idx = m4Indices(range(n), ys, 800);
    expect(idx.length).toBeLessThanOrEqual(4 * 800);
    expect(idx.length).toBeGreaterThan(800); // not a plain one-per-bucket sample
    // ascending, in range, no repeats
    expect(idx.every((v, k) => k === 0 || v > idx[k - 1]!)).toBe(true);
    expect(idx[0]).toBe(0);
    expect(idx[idx.length - 1]).toBe(n - 1);
  });

  it("keeps a one-point spike inside a bucket, up and down, and the bucket's first and last points", () => {
    const n = 10_000;
    const ys: number[] = range(n).map(() => 0.5);
    ys[4_321] = 9; // spike up, mid-bucket
    ys[7_777] = -9; // spike down
    const idx = m4Indices(range(n), ys, 100); // 100 points per bucket
    expect(idx).toContain(4_321);
    expect(idx).toContain(7_777);
    expect(idx).toContain(4_300); // first of the spike's bucket
    expect(idx).toContain(4_399); // last of it
    expect(Math.max(...idx.map((i) => ys[i]!))).toBe(9);
    expect(Math.min(...idx.map((i) => ys[i]!))).toBe(-9);
  });

  it("buckets by x, not by index: uneven x (wall time) puts bursts in one pixel column", () => {
    // 1,000 points crowded into x ∈ [0, 1) then 1,000 spread over [1, 1000]
    const xs = [...range(1_000).map((i) => i / 1_000), ...range(1_000).map((i) => 1 + i * (999 / 999))];
    const ys = xs.map((_, i) => (i === 500 ? 100 : i % 3));
    const idx = m4Indices(xs, ys, 50);
    expect(idx).toContain(500);
    // the crowded first column is at most 4 points
    expect(idx.filter((i) => xs[i]! < 1000 / 50).length).toBeLessThanOrEqual(4 * 1);
  });

  it("skips nulls and leaves empty buckets empty", () => {
    const n = 1_000;
    const ys = range(n).map((i) => (i >= 200 && i < 600 ? null : i));
    const idx = m4Indices(range(n), ys, 10);
    expect(idx.every((i) => ys[i] !== null)).toBe(true);
    expect(idx.some((i) => i >= 200 && i < 600)).toBe(false);
  });

  it("refuses a width that is not a positive integer", () => {
    expect(() => m4Indices([0, 1], [0, 1], 0)).toThrow(/width/);
    expect(() => m4Indices([0, 1], [0, 1], 1.5)).toThrow(/width/);
  });
});

describe("m4UnionIndices", () => {
  it("keeps every series' extremes on the shared x", () => {
    const n = 5_000;
    const a = range(n).map(() => 0);
    const b = range(n).map(() => 1);
    a[1_234] = 5;
    b[3_210] = -5;
    const idx = m4UnionIndices(range(n), [a, b], 20);
    expect(idx).toContain(1_234);
    expect(idx).toContain(3_210);
    expect(idx.length).toBeLessThanOrEqual(2 * 4 * 20);
  });
});
