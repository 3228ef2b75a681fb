import { describe, expect, it } from "vitest";
import { fmtAgo, fmtDuration, fmtMs, fmtNum, fmtSigned, truncate } from "./format";

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
