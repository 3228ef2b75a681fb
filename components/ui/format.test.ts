import { describe, expect, it } from "vitest";
import { fmtAgo, fmtAxisTick, fmtDuration, fmtMs, fmtNum, fmtSigned, truncate } from "./format";

describe("format helpers", () => {
  it("formats numbers and missing values", () => {
    expect(fmtNum(0.12345)).toBe("0.123");
    expect(fmtNum(null)).toBe("—");
    expect(fmtNum(Number.NaN)).toBe("—");
    expect(fmtSigned(0.5)).toBe("+0.500");
    expect(fmtSigned(-0.25)).toBe("−0.250");
    expect(fmtSigned(0)).toBe("±0.000");
  });

  it("formats durations", () => {
    expect(fmtMs(250)).toBe("250 ms");
    expect(fmtMs(1500)).toBe("1.5 s");
    expect(fmtMs(125_000)).toBe("2m 5s");
    expect(fmtDuration(new Date(0), new Date(2000))).toBe("2.0 s");
    expect(fmtDuration(new Date(2000), new Date(0))).toBe("—");
  });

  it("formats relative times and truncates", () => {
    expect(fmtAgo(new Date(10_000), 40_000)).toBe("30s ago");
    expect(fmtAgo(new Date(0), 7_200_000)).toBe("2h ago");
    expect(truncate("abcdef", 4)).toBe("abc…");
    expect(truncate("abc", 4)).toBe("abc");
  });
});

describe("fmtAxisTick", () => {
  it("keeps small values short and distinguishable", () => {
    expect(fmtAxisTick(0)).toBe("0");
    expect(fmtAxisTick(0.000022)).toBe("2.2e-5");
    expect(fmtAxisTick(-0.000011)).toBe("-1.1e-5");
    expect(fmtAxisTick(0.0042)).toBe("0.0042");
    expect(fmtAxisTick(0.35)).toBe("0.35");
    expect(fmtAxisTick(1.05)).toBe("1.05");
    expect(fmtAxisTick(250.4)).toBe("250");
    for (const v of [0.000022, -0.000011, 0.0042, 123456]) expect(fmtAxisTick(v).length).toBeLessThanOrEqual(7);
  });
});
