import { describe, expect, it } from "vitest";
import { utf8ByteLength } from "../bytes";
import { EXPERIMENT_MAX_BYTES, ExperimentFiles, codePaths, isExperimentPath, resolveRelativeImport, sortPaths } from "./files";

const base = { "scenario.ts": "", "reward.ts": "", "tasks.jsonl": "", "config.json": "" };

describe("the experiment model", () => {
  it("holds the four required files and TypeScript helpers under lib/", () => {
    expect(ExperimentFiles.safeParse({ ...base, "lib/tools.ts": "x", "lib/game/board.ts": "y" }).success).toBe(true);
    for (const bad of ["lib/x.js", "../scenario.ts", "lib/x.d.ts", "other.ts", "lib/", "/lib/x.ts", "lib/a b.ts"]) {
      expect(isExperimentPath(bad), bad).toBe(false);
    }
    const missing = ExperimentFiles.safeParse({ "scenario.ts": "" });
    expect(missing.success).toBe(false);
    const stray = ExperimentFiles.safeParse({ ...base, "notes.md": "hi" });
    expect(stray.success).toBe(false);
    if (!stray.success) expect(stray.error.issues[0]?.message).toContain('"notes.md" is not a file an experiment can hold');
  });

  it("refuses more than the documented 8 MB, counted in UTF-8 bytes", () => {
    const under = "x".repeat(EXPERIMENT_MAX_BYTES - 10);
    expect(ExperimentFiles.safeParse({ ...base, "tasks.jsonl": under }).success).toBe(true);
    // 3 bytes per character: a third of the cap in characters is right at the cap in bytes.
    const wide = "€".repeat(Math.ceil(EXPERIMENT_MAX_BYTES / 3) + 1);
    const r = ExperimentFiles.safeParse({ ...base, "tasks.jsonl": wide });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues[0]?.message).toMatch(/8 MB together; the limit is 8 MB/);
    expect(utf8ByteLength("a€😀")).toBe(1 + 3 + 4);
  });

  it("refuses NUL characters, naming the file", () => {
    const r = ExperimentFiles.safeParse({ ...base, "reward.ts": "a\0b" });
    expect(r.success).toBe(false);
    if (!r.success) expect(r.error.issues[0]).toMatchObject({ path: ["reward.ts"], message: "reward.ts contains a NUL character" });
  });

  it("resolves relative imports among the files only", () => {
    const files = { ...base, "lib/tools.ts": "", "lib/game/index.ts": "", "lib/game/board.ts": "" };
    expect(resolveRelativeImport("scenario.ts", "./lib/tools", files)).toBe("lib/tools.ts");
    expect(resolveRelativeImport("scenario.ts", "./lib/tools.ts", files)).toBe("lib/tools.ts");
    expect(resolveRelativeImport("scenario.ts", "./lib/tools.js", files)).toBe("lib/tools.ts");
    expect(resolveRelativeImport("scenario.ts", "./lib/game", files)).toBe("lib/game/index.ts");
    expect(resolveRelativeImport("lib/game/board.ts", "../tools", files)).toBe("lib/tools.ts");
    expect(resolveRelativeImport("lib/tools.ts", "../scenario", files)).toBe("scenario.ts");
    expect(resolveRelativeImport("lib/tools.ts", "../tasks.jsonl", files)).toBeNull();
    expect(resolveRelativeImport("scenario.ts", "../../etc/passwd", files)).toBeNull();
    expect(resolveRelativeImport("scenario.ts", "zod", files)).toBeNull();
  });

  it("orders paths as the editor shows them", () => {
    const files = { "lib/b.ts": "", "config.json": "", "lib/a.ts": "", "reward.ts": "", "tasks.jsonl": "", "scenario.ts": "" };
    expect(sortPaths(Object.keys(files))).toEqual(["scenario.ts", "reward.ts", "tasks.jsonl", "config.json", "lib/a.ts", "lib/b.ts"]);
    expect(codePaths(files)).toEqual(["scenario.ts", "reward.ts", "lib/a.ts", "lib/b.ts"]);
  });
});
