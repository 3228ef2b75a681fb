import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { parseTasks } from "./tasks";

describe("parseTasks", () => {
  it("splits the template's tasks and strips the split key", () => {
    const r = parseTasks(readFileSync(new URL("../../../templates/say-the-word/tasks.jsonl", import.meta.url), "utf8"));
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.train).toHaveLength(24);
    expect(r.val).toHaveLength(8);
    expect(r.train[0]).toEqual({ index: 0, line: 1, split: "train", data: { word: "apple" } });
    expect(r.val[0]).toEqual({ index: 0, line: 25, split: "val", data: { word: "falcon" } });
  });

  it("skips blank lines but keeps real line numbers", () => {
    const r = parseTasks('\n{"a":1}\r\n\n{"a":2}\n');
    if (!r.ok) throw new Error("expected ok");
    expect(r.train.map((t) => t.line)).toEqual([2, 4]);
  });

  it("names a malformed line 3, and reports every bad line", () => {
    const r = parseTasks('{"a":1}\n{"a":2}\n{"a":3,\n[1,2]\n{"a":5,"split":"test"}\n42\n');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics.map((d) => d.line)).toEqual([3, 4, 5, 6]);
    expect(r.diagnostics[0]).toMatchObject({ file: "tasks.jsonl", line: 3, severity: "error" });
    expect(r.diagnostics[0]?.message).toMatch(/^tasks\.jsonl line 3: invalid JSON/);
    expect(r.diagnostics[1]?.message).toContain("must be a JSON object");
    expect(r.diagnostics[2]?.message).toBe('tasks.jsonl line 5, field "split": must be "train" or "val", got "test"');
  });

  it("needs at least one training task", () => {
    const r = parseTasks('{"a":1,"split":"val"}\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.diagnostics[0]?.message).toContain("no training tasks");
    expect(parseTasks("").ok).toBe(false);
  });
});
