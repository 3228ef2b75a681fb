import { describe, expect, it } from "vitest";
import { type SplitResult, type SplitSpec, applySplit } from "./split";
import { importTasks } from "./import-tasks";
import { parseTasks } from "./parse-tasks";
import { MAX_TASKS_BYTES } from "./limits";
import type { ImportedRow } from "./import-types";

const rowsOf = (data: Record<string, unknown>[]): ImportedRow[] => data.map((d, i) => ({ row: i + 1, line: i + 2, data: d }));
const numbered = (n: number) => rowsOf(Array.from({ length: n }, (_, i) => ({ n: i })));

function ok(r: SplitResult) {
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r;
}
function fail(r: SplitResult) {
  if (r.ok) throw new Error("expected errors");
  expect(r).not.toHaveProperty("rows");
  return r;
}
const valSet = (r: SplitResult) => ok(r).rows.flatMap((x, i) => (x.split === "val" ? [i] : []));

describe("applySplit by field", () => {
  it("reads Hugging Face split names: train → train; validation and test → val; and consumes the reserved split key", () => {
    const r = ok(
      applySplit(rowsOf([{ q: "a", split: "train" }, { q: "b", split: "validation" }, { q: "c", split: "TEST" }, { q: "d", split: "Training" }]), {
        by: "field",
        field: "split",
      }),
    );
    expect(r.rows.map((x) => [x.split, x.data])).toEqual([
      ["train", { q: "a" }],
      ["val", { q: "b" }],
      ["val", { q: "c" }],
      ["train", { q: "d" }],
    ]);
    expect([r.train, r.val]).toEqual([2, 2]);
  });

  it("names the row and field of a value it does not know, or a missing one, and splits nothing", () => {
    const r = fail(applySplit(rowsOf([{ fold: "train" }, { fold: "holdout" }, {}, { fold: null }, { fold: "" }]), { by: "field", field: "fold" }));
    expect(r.errors).toEqual([
      {
        row: 2,
        line: 3,
        field: "fold",
        message:
          '"holdout" is neither a training value (train, training) nor a validation value (val, valid, validation, dev, test, eval, evaluation); choose which values are validation',
      },
      { row: 3, line: 4, field: "fold", message: "no value, so the row has no split" },
      { row: 4, line: 5, field: "fold", message: "no value, so the row has no split" },
      { row: 5, line: 6, field: "fold", message: expect.stringContaining('"" is neither a training value') },
    ]);
    // A value "split" does not know is still an error: only a missing one has a meaning there.
    expect(fail(applySplit(rowsOf([{ split: "holdout" }]), { by: "field", field: "split" })).errors).toMatchObject([{ row: 1, field: "split" }]);
  });

  it("reads Rollbook's own tasks.jsonl convention: no split is train, \"val\" is validation", () => {
    const r = ok(applySplit(rowsOf([{ q: "a" }, { q: "b", split: "val" }, { q: "c", split: null }, { q: "d", split: " " }, { q: "e", split: "train" }]), { by: "field", field: "split" }));
    expect(r.rows.map((x) => [x.split, x.data])).toEqual([
      ["train", { q: "a" }],
      ["val", { q: "b" }],
      ["train", { q: "c" }],
      ["train", { q: "d" }],
      ["train", { q: "e" }],
    ]);
    expect([r.train, r.val]).toEqual([4, 1]);
    // Also with chosen validation values: every other row, the unmarked ones included, trains.
    expect(ok(applySplit(rowsOf([{ q: "a" }, { q: "b", split: "holdout" }]), { by: "field", field: "split", valValues: ["holdout"] }))).toMatchObject({ train: 1, val: 1 });
  });

  it("with valValues, those values are val and all others train; another field stays in the task", () => {
    const r = ok(applySplit(rowsOf([{ fold: 0 }, { fold: 1 }, { fold: 4 }, { fold: 0 }]), { by: "field", field: "fold", valValues: [0] }));
    expect(r.rows.map((x) => x.split)).toEqual(["val", "train", "train", "val"]);
    expect(r.rows[0]?.data).toEqual({ fold: 0 });
    expect(ok(applySplit(rowsOf([{ s: "Holdout" }, { s: "x" }]), { by: "field", field: "s", valValues: ["holdout"] })).val).toBe(1);
  });

  it("needs one training row", () => {
    expect(fail(applySplit(rowsOf([{ split: "test" }]), { by: "field", field: "split" })).errors[0]?.message).toBe(
      "no training rows: all 1 rows are validation; a run needs at least one training task",
    );
  });

  it("refuses a reserved split column when splitting by something else, since tasks.jsonl would misread it", () => {
    const r = fail(applySplit(rowsOf([{ fold: 1 }, { fold: 2, split: "x" }]), { by: "field", field: "fold", valValues: [1] }));
    expect(r.errors).toEqual([{ row: 2, line: 3, field: "split", message: expect.stringContaining('"split" is reserved') }]);
  });
});

describe("applySplit by ratio", () => {
  const spec = (val: number, seed: number): SplitSpec => ({ by: "ratio", val, seed });

  it("puts round(n × ratio) rows in val, within one row, for many sizes", () => {
    for (const n of [1, 2, 3, 7, 10, 99, 1000, 10_001]) {
      for (const val of [0, 0.05, 0.1, 0.333, 0.5, 0.9]) {
        const r = ok(applySplit(numbered(n), spec(val, 7)));
        expect(Math.abs(r.val - n * val)).toBeLessThanOrEqual(1);
        expect(r.train).toBeGreaterThanOrEqual(1);
        expect(r.train + r.val).toBe(n);
      }
    }
  });

  it("is the same for the same seed, different for another, and keeps file order", () => {
    const rows = numbered(1000);
    const a = valSet(applySplit(rows, spec(0.1, 42)));
    expect(a).toHaveLength(100);
    expect(valSet(applySplit(rows, spec(0.1, 42)))).toEqual(a);
    const b = valSet(applySplit(rows, spec(0.1, 43)));
    expect(b).toHaveLength(100);
    expect(b).not.toEqual(a);
    expect(ok(applySplit(rows, spec(0.1, 42))).rows.map((x) => x.data.n)).toEqual(rows.map((x) => x.data.n));
  });

  it("spreads val over the file rather than taking a block", () => {
    const v = valSet(applySplit(numbered(1000), spec(0.1, 1)));
    expect(v.filter((i) => i < 500).length).toBeGreaterThan(30);
    expect(v.filter((i) => i >= 500).length).toBeGreaterThan(30);
  });

  it("leaves one training row even when the ratio rounds to all of them", () => {
    expect(ok(applySplit(numbered(2), spec(0.9, 1)))).toMatchObject({ train: 1, val: 1 });
  });

  it("refuses an out-of-range ratio, and rows holding the reserved split key", () => {
    expect(fail(applySplit(numbered(3), spec(1, 1))).errors[0]?.message).toMatch(/^invalid split: val:/);
    const r = fail(applySplit(rowsOf([{ a: 1 }, { a: 2, split: "val" }]), spec(0.5, 1)));
    expect(r.errors).toMatchObject([{ row: 2, field: "split" }]);
  });
});

describe("importTasks: upload → split → tasks.jsonl", () => {
  const file = (name: string, text: string) => ({ name, bytes: new TextEncoder().encode(text) });

  it("writes the tasks.jsonl that parseTasks reads back as the same split", async () => {
    const r = await importTasks(file("gsm.csv", "question,answer,split\nq1,1,train\nq2,2,test\nq3,3,train\n"), { by: "field", field: "split" });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r).toMatchObject({ format: "csv", train: 2, val: 1 });
    expect(r.text).toBe('{"question":"q1","answer":1}\n{"question":"q2","answer":2,"split":"val"}\n{"question":"q3","answer":3}\n');
    const parsed = parseTasks(r.text);
    if (!parsed.ok) throw new Error("expected ok");
    expect(parsed.val.map((t) => t.data)).toEqual([{ question: "q2", answer: 2 }]);
  });

  it("imports a tasks.jsonl written in Rollbook's own convention as the same split it had", async () => {
    const original = '{"word":"cat"}\n{"word":"dog","split":"val"}\n{"word":"emu"}\n';
    const r = await importTasks(file("tasks.jsonl", original), { by: "field", field: "split" });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r).toMatchObject({ format: "jsonl", train: 2, val: 1, text: original });
  });

  it("fails with the import's errors, or the split's, and no text", async () => {
    const bad = await importTasks(file("t.jsonl", '{"a":1}\n{"a":\n'), { by: "ratio", val: 0.1, seed: 1 });
    expect(bad).toMatchObject({ ok: false, errorCount: 1, errors: [{ row: 2, line: 2 }] });
    expect(bad).not.toHaveProperty("text");
    const noField = await importTasks(file("t.jsonl", '{"a":1}\n'), { by: "field", field: "fold" });
    expect(noField).toMatchObject({ ok: false, errors: [{ row: 1, field: "fold" }] });
  });

  it("refuses a tasks.jsonl over the limit even when the upload was under it (JSON Lines repeat every key)", async () => {
    // 2 MB of CSV: ten one-digit columns with 60-character names, which every JSON line repeats (~65 MB),
    // far over the 8 MB a tasks.jsonl may take inside its experiment.
    const names = Array.from({ length: 10 }, (_, i) => `column_${i}_`.padEnd(60, "x"));
    const csv = `${names.join(",")}\n` + "1,1,1,1,1,1,1,1,1,1\n".repeat(100_000);
    expect(csv.length).toBeLessThan(MAX_TASKS_BYTES / 20);
    const r = await importTasks(file("wide.csv", csv), { by: "ratio", val: 0, seed: 0 });
    if (r.ok) throw new Error("expected the size limit");
    expect(r.errors[0]?.message).toMatch(/^the tasks\.jsonl made from it is \d+(\.\d)? MB \([\d,]+ bytes\); the limit is 8 MB/);
  });
});
