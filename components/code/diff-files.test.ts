import { describe, expect, it } from "vitest";
import { activeDiffFile, diffCountText, diffFileRows, fileStates, stateTitles } from "./diff-files";

const left = { "scenario.ts": "s", "reward.ts": "r", "config.json": "{}", "lib/old.ts": "o" };
const right = { "scenario.ts": "s2", "reward.ts": "r", "config.json": "{}", "lib/new.ts": "n" };

describe("the files beside a diff", () => {
  it("lists differing files first, each half in the experiment's order", () => {
    expect(fileStates(left, right)).toEqual([
      { path: "scenario.ts", state: "changed" },
      { path: "lib/new.ts", state: "added" },
      { path: "lib/old.ts", state: "removed" },
      { path: "reward.ts", state: "same" },
      { path: "config.json", state: "same" },
    ]);
  });

  it("shows the picked file while it is listed, else the first", () => {
    const files = fileStates(left, right);
    expect(activeDiffFile(files, "reward.ts")).toBe("reward.ts");
    expect(activeDiffFile(files, "gone.ts")).toBe("scenario.ts");
    expect(activeDiffFile(files, null)).toBe("scenario.ts");
    expect(activeDiffFile([], null)).toBe("scenario.ts");
  });

  it("counts the differing files", () => {
    expect(diffCountText(fileStates(left, right))).toBe("3 of 5 files differ");
    expect(diffCountText(fileStates(left, left))).toBe("the files are identical");
  });

  it("marks each row, names the sides in its title and highlights the active one", () => {
    const rows = diffFileRows(fileStates(left, right), "lib/new.ts", stateTitles("v3", "your editor"));
    expect(rows.map((r) => [r.path, r.sign, r.title, r.current])).toEqual([
      ["scenario.ts", "M", "differs", false],
      ["lib/new.ts", "A", "only in your editor", true],
      ["lib/old.ts", "D", "only in v3", false],
      ["reward.ts", "", "identical", false],
      ["config.json", "", "identical", false],
    ]);
    expect(rows[1]!.buttonClassName).toContain("bg-zinc-800 text-zinc-100");
    expect(rows[0]!.buttonClassName).toContain("text-zinc-200 hover:bg-zinc-800/60");
    expect(rows[3]!.buttonClassName).toContain("text-zinc-500 hover:bg-zinc-800/60");
    expect(rows[0]!.markClassName).toBe("w-3 shrink-0 text-center font-bold text-amber-300");
    expect(stateTitles("the left run", "the right run").removed).toBe("only in the left run");
  });
});
