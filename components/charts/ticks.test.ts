import { describe, expect, it } from "vitest";
import { fmtAxisTick } from "../ui/format";
import { tickLabels } from "./ticks";

describe("tickLabels", () => {
  it("keeps the short labels when they tell the ticks apart", () => {
    expect(tickLabels([0, 0.5, 1], fmtAxisTick)).toEqual(["0", "0.5", "1.00"]);
  });
  it("adds decimals when the short labels would repeat (probs_corr near 1)", () => {
    expect(tickLabels([0.995, 0.996, 0.997], fmtAxisTick)).toEqual(["0.995", "0.996", "0.997"]);
    expect(new Set(tickLabels([0.9992, 0.9994, 0.9996], fmtAxisTick)).size).toBe(3);
  });
});
