import { describe, expect, it } from "vitest";
import { checkHelperPath, deleteFile, helperStub, normalizeHelperPath, renameFile } from "./file-ops";
import { runtimeDiagnostics, sameCode, type LatestRuntimeErrors } from "./runtime-markers";
import { parseStack, userFrames } from "@/components/code/stack-frames";

const base = { "scenario.ts": "s", "reward.ts": "r", "tasks.jsonl": "{}", "config.json": "{}" };

describe("helper file names", () => {
  it("normalizes what the user types to a path under lib/", () => {
    expect(normalizeHelperPath("tools")).toBe("lib/tools.ts");
    expect(normalizeHelperPath(" game/board ")).toBe("lib/game/board.ts");
    expect(normalizeHelperPath("./lib/x.ts")).toBe("lib/x.ts");
    expect(normalizeHelperPath("/lib/x")).toBe("lib/x.ts");
    expect(normalizeHelperPath("x.js")).toBe("lib/x.js");
    // New file's field starts with "lib/": typing "lib/x.ts" after it is lib/x.ts, not lib/lib/x.ts.
    expect(normalizeHelperPath("lib/" + "lib/x.ts")).toBe("lib/x.ts");
    expect(normalizeHelperPath("lib/lib/lib/game/board")).toBe("lib/game/board.ts");
    expect(normalizeHelperPath("library/x")).toBe("lib/library/x.ts");
    expect(normalizeHelperPath("  ")).toBe("");
  });

  it("refuses names the contract refuses, naming the rule", () => {
    const files = { ...base, "lib/tools.ts": "" };
    expect(checkHelperPath("lib/new.ts", files)).toBeNull();
    expect(checkHelperPath("lib/a.b.ts", files)).toBeNull();
    expect(checkHelperPath("lib/game/board.ts", files)).toBeNull();
    expect(checkHelperPath("", files)).toMatch(/Type a name/);
    expect(checkHelperPath("lib/tools.ts", files)).toBe('"lib/tools.ts" already exists.');
    expect(checkHelperPath("scenario.ts", files)).toMatch(/required file/);
    expect(checkHelperPath("lib/x.js", files)).toMatch(/must end in \.ts/);
    expect(checkHelperPath("lib/x.d.ts", files)).toMatch(/declaration files/);
    expect(checkHelperPath("lib/a b.ts", files)).toMatch(/only letters, digits, "_" and "-"/);
    expect(checkHelperPath("lib/../x.ts", files)).toMatch(/only letters/);
    expect(checkHelperPath("lib/a/b/c/d/e/f.ts", files)).toMatch(/at most 4 folders/);
    // Renaming a file to its own name is no change, not a clash.
    expect(checkHelperPath("lib/tools.ts", files, "lib/tools.ts")).toBeNull();
    const full = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`lib/f${i}.ts`, ""]));
    expect(checkHelperPath("lib/more.ts", { ...base, ...full })).toMatch(/at most 64 files/);
  });

  it("renames and deletes without touching the other files, and stubs a module", () => {
    const files = { ...base, "lib/a.ts": "A" };
    expect(renameFile(files, "lib/a.ts", "lib/b.ts")).toEqual({ ...base, "lib/b.ts": "A" });
    expect(deleteFile(files, "lib/a.ts")).toEqual(base);
    expect(helperStub("lib/game/board.ts")).toContain('from "./lib/game/board"');
    expect(helperStub("lib/x.ts")).toContain("export {};");
  });
});

const STACK = [
  "Error: bad input",
  "    at check (lib/check.ts:3:11)",
  "    at async rollout (scenario.ts:6:3)",
  "    at runAgent (rollbook/agent.ts:40:7)",
  "    at reward.ts:2:1",
  "    at Array.map (<anonymous>)",
].join("\n");

describe("stack frames", () => {
  it("picks out frames in the experiment's code files, not the SDK's or the engine's", () => {
    const lines = parseStack(STACK);
    expect(lines.map((l) => l.text)).toEqual(STACK.split("\n"));
    expect(lines.map((l) => l.frame?.file ?? null)).toEqual([null, "lib/check.ts", "scenario.ts", null, "reward.ts", null]);
    expect(userFrames(STACK)).toEqual([
      { fn: "check", file: "lib/check.ts", line: 3, column: 11 },
      { fn: "async rollout", file: "scenario.ts", line: 6, column: 3 },
      { fn: null, file: "reward.ts", line: 2, column: 1 },
    ]);
    expect(userFrames(undefined)).toEqual([]);
  });
});

describe("runtime markers", () => {
  const latest: LatestRuntimeErrors = {
    run: { id: "r", number: 7, kind: "dry-run", status: "completed", errorCount: 3 },
    code: { "scenario.ts": "s", "reward.ts": "r", "lib/check.ts": "c" },
    errors: [
      { kind: "thrown", message: "bad input", stack: STACK, count: 2 },
      { kind: "timeout", message: "too slow", stack: null, count: 1 },
    ],
  };
  const files = { ...base, "lib/check.ts": "c" };

  it("marks every user frame while the code is the run's code", () => {
    const ds = runtimeDiagnostics(latest, files);
    expect(ds.map((d) => `${d.file}:${d.line}:${d.column}`)).toEqual(["lib/check.ts:3:11", "scenario.ts:6:3", "reward.ts:2:1"]);
    expect(ds.every((d) => d.severity === "warning")).toBe(true);
    expect(ds[0]!.message).toBe("run #7 (2 rollouts): thrown: bad input");
    expect(ds[1]!.message).toContain("called from here, in async rollout");
  });

  it("marks nothing once any code file differs, is added or removed (config and tasks do not count)", () => {
    expect(sameCode(latest.code, { ...files, "tasks.jsonl": "other", "config.json": "{ }" })).toBe(true);
    expect(runtimeDiagnostics(latest, { ...files, "lib/check.ts": "c2" })).toEqual([]);
    expect(runtimeDiagnostics(latest, { ...files, "lib/new.ts": "" })).toEqual([]);
    expect(runtimeDiagnostics(latest, base)).toEqual([]);
    expect(runtimeDiagnostics(null, files)).toEqual([]);
  });
});
