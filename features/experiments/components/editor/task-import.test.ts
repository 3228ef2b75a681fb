import { describe, expect, it } from "vitest";
import { applySplit, importTaskFile, parseTasks, type SplitRow } from "@contracts";
import { candidateTasks, defaultSplit, defaultSplitField, importVerdict, parseValValues, sourceOf } from "./task-import";

const bytes = (s: string) => new TextEncoder().encode(s);

describe("task import helpers", () => {
  it("splits by the split column when there is one, else 10 % by a seeded ratio", () => {
    expect(defaultSplit(["q", "split"])).toEqual({ by: "field", field: "split" });
    expect(defaultSplit(["q"])).toEqual({ by: "ratio", val: 0.1, seed: 42 });
    expect(defaultSplitField(["q", "split"])).toBe("split");
    expect(defaultSplitField(["q", "fold"])).toBe("q");
  });

  it("reads validation values as typed: strings, numbers, booleans; empty means the common names", () => {
    expect(parseValValues(" test, dev ,")).toEqual(["test", "dev"]);
    expect(parseValValues("0, 1.5, true")).toEqual([0, 1.5, true]);
    expect(parseValValues("  ")).toBeUndefined();
  });

  it("makes a candidate tasks.jsonl the runner's parser reads back as the same split", async () => {
    const csv = "question,answer,split\nWhat is 1+1?,2,train\n\nWhat is 2+2?,4,test\nWhat is 3+3?,6,train\n";
    const imported = await importTaskFile({ name: "qa.csv", bytes: bytes(csv) });
    if (!imported.ok) throw new Error(JSON.stringify(imported.errors));
    const split = applySplit(imported.rows, defaultSplit(imported.columns));
    if (!split.ok) throw new Error(JSON.stringify(split.errors));
    const c = candidateTasks(split.rows);
    if (!c.ok) throw new Error(c.message);
    const back = parseTasks(c.text);
    if (!back.ok) throw new Error(JSON.stringify(back.errors));
    expect(back.train.map((r) => r.data)).toEqual([
      { question: "What is 1+1?", answer: 2 },
      { question: "What is 3+3?", answer: 6 },
    ]);
    expect(back.val.map((r) => r.data)).toEqual([{ question: "What is 2+2?", answer: 4 }]);

    // A row error at line 2 of the candidate is the upload's data row 2, on line 4 of the CSV.
    const d = { file: "tasks.jsonl", line: 2, message: 'tasks.jsonl line 2, field "answer": does not fit taskSchema: expected string' };
    expect(sourceOf(d, split.rows, "qa.csv")).toBe("qa.csv row 2 (line 4)");
    expect(sourceOf({ ...d, message: "3 more task rows do not fit taskSchema" }, split.rows, "qa.csv")).toBeNull();
    expect(sourceOf({ ...d, file: "scenario.ts" }, split.rows, "qa.csv")).toBeNull();
  });

  it("imports a file in Rollbook's own tasks.jsonl convention (only val rows carry split) as it was split", async () => {
    const original = '{"word":"cat"}\n{"word":"dog","split":"val"}\n{"word":"emu"}\n{"word":"owl","split":"val"}\n';
    const imported = await importTaskFile({ name: "tasks.jsonl", bytes: bytes(original) });
    if (!imported.ok) throw new Error(JSON.stringify(imported.errors));
    const split = applySplit(imported.rows, defaultSplit(imported.columns));
    if (!split.ok) throw new Error(JSON.stringify(split.errors));
    expect([split.train, split.val]).toEqual([2, 2]);
    const c = candidateTasks(split.rows);
    if (!c.ok) throw new Error(c.message);
    expect(c.text).toBe(original);
  });

  it("refuses a candidate over the experiment's 8 MB", () => {
    const big = "x".repeat(1_000_000);
    const rows: SplitRow[] = Array.from({ length: 9 }, (_, i) => ({ row: i + 1, data: { big }, split: "train" }));
    const c = candidateTasks(rows);
    expect(c.ok).toBe(false);
    if (!c.ok) expect(c.message).toMatch(/tasks\.jsonl made from these rows is 9 MB; an experiment's files hold at most 8 MB\./);
  });

  it("refuses the import on row errors, and on errors elsewhere (the rows could not be checked)", () => {
    const row = { file: "tasks.jsonl", line: 3, column: 1, message: "row", severity: "error" as const };
    const code = { file: "scenario.ts", line: 1, column: 1, message: "type", severity: "error" as const };
    const warn = { ...code, severity: "warning" as const };
    expect(importVerdict([])).toEqual({ ok: true });
    expect(importVerdict([warn])).toEqual({ ok: true });
    expect(importVerdict([row, code, warn])).toEqual({ ok: false, rows: [row], other: [code] });
  });
});
