import { describe, expect, it } from "vitest";
import { diagnosticFile, jsonlDiagnostics } from "./files";

describe("editor file helpers", () => {
  it("maps diagnostics to the experiment's files, exact path first, then by base name", () => {
    const files = { "scenario.ts": "", "reward.ts": "", "tasks.jsonl": "", "config.json": "", "lib/tools.ts": "" };
    expect(diagnosticFile({ file: "scenario.ts" }, files)).toBe("scenario.ts");
    expect(diagnosticFile({ file: "lib/tools.ts" }, files)).toBe("lib/tools.ts");
    expect(diagnosticFile({ file: "/lib/tools.ts" }, files)).toBe("lib/tools.ts");
    expect(diagnosticFile({ file: "/work/x/reward.ts" }, files)).toBe("reward.ts");
    expect(diagnosticFile({ file: "file:///config.json" }, files)).toBe("config.json");
    expect(diagnosticFile({ file: "other.ts" }, files)).toBeNull();
  });

  it("flags tasks.jsonl lines as the runner's parser does, with 1-based lines", () => {
    const text = '{"word": "a"}\n\n[1, 2]\n{"word": \n  \n{"ok": true}\n';
    const d = jsonlDiagnostics(text);
    expect(d.map((x) => x.line)).toEqual([3, 4]);
    expect(d.every((x) => x.file === "tasks.jsonl" && x.severity === "error")).toBe(true);
    expect(d[0]!.message).toMatch(/^tasks\.jsonl line 3/);
    expect(jsonlDiagnostics('{"a":1}\n{"b":2}')).toEqual([]);
    expect(jsonlDiagnostics('{"a":1, "split": "val"}')[0]!.message).toMatch(/no training tasks/);
  });
});
