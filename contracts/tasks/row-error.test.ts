import { describe, expect, it } from "vitest";
import {
  RowErrorList,
  capRowErrors,
  fieldColumn,
  fieldPath,
  formatRowError,
  rowErrorToDiagnostic,
  rowErrorsFromIssues,
} from "./row-error";
import { Diagnostic } from "../run";

describe("formatRowError", () => {
  it("names the file, the line and the field", () => {
    expect(formatRowError({ line: 5031, field: "answer", message: "expected number, got string" }, "tasks.jsonl")).toBe(
      'tasks.jsonl line 5031, field "answer": expected number, got string',
    );
  });

  it("adds the row when it differs from the line, and names the row alone without lines", () => {
    expect(formatRowError({ row: 17, line: 18, message: "bad" }, "train.csv")).toBe("train.csv row 17 (line 18): bad");
    expect(formatRowError({ row: 18, line: 18, message: "bad" }, "a.jsonl")).toBe("a.jsonl line 18: bad");
    expect(formatRowError({ row: 3, field: "tags[0]", message: "bad" }, "d.parquet")).toBe('d.parquet row 3, field "tags[0]": bad');
    expect(formatRowError({ message: "the file has no rows" }, "d.csv")).toBe("d.csv: the file has no rows");
  });
});

describe("rowErrorToDiagnostic", () => {
  it("is an editor Diagnostic at the error's line and column, file-level errors at 1:1", () => {
    const d = rowErrorToDiagnostic({ line: 7, column: 12, field: "a", message: "m" }, "tasks.jsonl");
    expect(Diagnostic.parse(d)).toEqual({ file: "tasks.jsonl", line: 7, column: 12, message: 'tasks.jsonl line 7, field "a": m', severity: "error" });
    expect(rowErrorToDiagnostic({ message: "too big" }, "tasks.jsonl", "warning")).toMatchObject({ line: 1, column: 1, severity: "warning" });
  });
});

describe("capping", () => {
  it("keeps the first 50 and says how many more from where", () => {
    const errors = Array.from({ length: 10_000 }, (_, i) => ({ line: i + 1, message: `bad ${i + 1}` }));
    const capped = capRowErrors(errors);
    expect(capped).toHaveLength(51);
    expect(capped[49]).toEqual({ line: 50, message: "bad 50" });
    expect(capped[50]?.line).toBe(51);
    expect(capped[50]?.message).toMatch(/^9,950 more errors from here on/);
  });

  it("adds no summary when nothing was left out, and counts all", () => {
    const list = new RowErrorList(3);
    for (let i = 1; i <= 3; i++) list.add({ row: i, message: "x" });
    expect(list.full).toBe(true);
    expect(list.list()).toHaveLength(3);
    list.add({ row: 4, message: "x" });
    expect(list.count).toBe(4);
    expect(list.list()[3]).toMatchObject({ row: 4, message: expect.stringMatching(/^1 more error from here on/) });
  });
});

describe("fields", () => {
  it("writes paths as a reader would", () => {
    expect(fieldPath(["messages", 0, "content"])).toBe("messages[0].content");
    expect(fieldPath(["a b", "c"])).toBe('["a b"].c');
    expect(fieldPath([])).toBe("");
  });

  it("finds a field's key in a JSON line, or the nearest existing parent", () => {
    const line = '{"q": "hi", "meta": {"level": 3}, "tags": ["a", 5]}';
    expect(fieldColumn(line, ["meta", "level"])).toBe(line.indexOf('"level"') + 1);
    expect(fieldColumn(line, ["tags", 1])).toBe(line.indexOf("5") + 1);
    expect(fieldColumn(line, ["meta", "missing"])).toBe(line.indexOf('"meta"') + 1);
    expect(fieldColumn(line, ["nope"])).toBeUndefined();
  });

  it("turns a schema check's issues into row errors at the field's column", () => {
    const lineText = '{"question": "2+2", "answer": "4"}';
    const errors = rowErrorsFromIssues({ line: 5031, lineText }, [{ path: ["answer"], message: "expected number, got string" }]);
    expect(errors).toEqual([{ line: 5031, column: lineText.indexOf('"answer"') + 1, field: "answer", message: "expected number, got string" }]);
    expect(formatRowError(errors[0]!, "tasks.jsonl")).toBe('tasks.jsonl line 5031, field "answer": expected number, got string');
  });
});
