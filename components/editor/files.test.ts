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

  it("flags tasks.jsonl lines that are not JSON objects, with 1-based lines", () => {
    const text = '{"word": "a"}\n\n[1, 2]\n{"word": \n  \n{"ok": true}\n';
    const d = jsonlDiagnostics(text);
    expect(d.map((x) => x.line)).toEqual([3, 4]);
    expect(d[0]!.message).toMatch(/JSON object/);
    expect(d[1]!.message).toMatch(/invalid JSON/);
    expect(jsonlDiagnostics('{"a":1}\n{"b":2}')).toEqual([]);
  });
});
