import { describe, expect, it } from "vitest";
import Papa from "papaparse";
import { parquetWriteBuffer } from "hyparquet-writer";
import { importTaskFile } from "./import-file";
import { formatRowError } from "./row-error";
import { MAX_TASKS_BYTES, MAX_TASK_ROWS } from "./limits";
import type { ImportResult } from "./import-types";
import { MAX_JSON_DEPTH } from "../json-depth";

const bytes = (text: string) => new TextEncoder().encode(text);

/** Flat rows every format can hold, with the awkward bits: quotes, commas, newlines, tabs, non-ASCII. */
const FLAT = [
  { question: "What is 2 + 2?", answer: 4, exact: true, hint: 'add, then "check"\nagain' },
  { question: "Capital of France?", answer: 2.5, exact: false, hint: "" },
  { question: "Ünïcödé ✓ 🚀", answer: -1, exact: true, hint: "a\ttab" },
];
/** The same plus a list and a struct, for the formats that hold them. */
const NESTED = FLAT.map((r, i) => ({ ...r, tags: i === 1 ? [] : ["math", `t${i}`], meta: { level: i, source: i === 2 ? null : "gsm8k" } }));

function nestedParquet(): Uint8Array {
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: "question", data: NESTED.map((r) => r.question) },
      { name: "answer", data: NESTED.map((r) => r.answer) },
      { name: "exact", data: NESTED.map((r) => r.exact) },
      { name: "hint", data: NESTED.map((r) => r.hint) },
      { name: "tags", data: NESTED.map((r) => r.tags) },
      { name: "meta", data: NESTED.map((r) => r.meta) },
    ],
    schema: [
      { name: "root", num_children: 6 },
      { name: "question", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
      { name: "answer", type: "DOUBLE", repetition_type: "REQUIRED" },
      { name: "exact", type: "BOOLEAN", repetition_type: "REQUIRED" },
      { name: "hint", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
      { name: "tags", converted_type: "LIST", repetition_type: "OPTIONAL", num_children: 1 },
      { name: "list", repetition_type: "REPEATED", num_children: 1 },
      { name: "element", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
      { name: "meta", repetition_type: "REQUIRED", num_children: 2 },
      { name: "level", type: "INT32", repetition_type: "REQUIRED" },
      { name: "source", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
    ],
  });
  return new Uint8Array(buffer);
}

function expectRows(r: ImportResult) {
  if (!r.ok) throw new Error(r.errors.map((e) => formatRowError(e, "file")).join("\n"));
  return r;
}
function expectErrors(r: ImportResult) {
  if (r.ok) throw new Error(`expected errors, got ${r.rows.length} rows`);
  expect(r).not.toHaveProperty("rows"); // all or nothing: never a partial import
  return r;
}

describe("importTaskFile: every format gives the same rows", () => {
  it.each([
    ["tasks.jsonl", "jsonl", NESTED.map((r) => JSON.stringify(r)).join("\n") + "\n", NESTED],
    ["tasks.ndjson", "jsonl", NESTED.map((r) => JSON.stringify(r)).join("\r\n"), NESTED],
    ["tasks.json", "json", JSON.stringify(NESTED, null, 2), NESTED],
    ["squad-style.json", "json", JSON.stringify({ version: "1", data: NESTED }), NESTED],
    ["hf-to_json.json", "jsonl", NESTED.map((r) => JSON.stringify(r)).join("\n"), NESTED],
    ["tasks.csv", "csv", Papa.unparse(FLAT), FLAT],
    ["semicolons.csv", "csv", Papa.unparse(FLAT, { delimiter: ";" }), FLAT],
    ["tasks.tsv", "tsv", Papa.unparse(FLAT, { delimiter: "\t" }), FLAT],
  ] as const)("%s (%s)", async (name, format, text, expected) => {
    const r = expectRows(await importTaskFile({ name, bytes: bytes(text) }));
    expect(r.format).toBe(format);
    expect(r.rows.map((row) => row.data)).toEqual(expected);
    expect(r.rows.map((row) => row.row)).toEqual([1, 2, 3]);
    expect(r.columns).toEqual(Object.keys(expected[0]!));
  });

  it("tasks.parquet (parquet), with a list and a struct", async () => {
    const r = expectRows(await importTaskFile({ name: "tasks.parquet", bytes: nestedParquet() }));
    expect(r.format).toBe("parquet");
    expect(r.rows.map((row) => row.data)).toEqual(NESTED);
    expect(r.rows[2]).toEqual({ row: 3, data: NESTED[2] }); // no lines in a binary format
  });

  it("keeps the line each row starts on for text formats", async () => {
    const r = expectRows(await importTaskFile({ name: "t.jsonl", bytes: bytes('{"a":1}\n\n{"a":2}\n') }));
    expect(r.rows).toEqual([
      { row: 1, line: 1, data: { a: 1 } },
      { row: 2, line: 3, data: { a: 2 } },
    ]);
  });

  it("strips a UTF-8 byte order mark", async () => {
    const r = expectRows(await importTaskFile({ name: "t.csv", bytes: bytes("\uFEFFq,a\nx,1\n") }));
    expect(r.rows[0]?.data).toEqual({ q: "x", a: 1 });
  });
});

describe("importTaskFile: format by content when the name says nothing", () => {
  it.each([
    ["JSON Lines", '{"a":1}\n{"a":2}\n', "jsonl"],
    ["a JSON array", '  [{"a":1},{"a":2}]', "json"],
    ["CSV", "a,b\n1,2\n3,4\n", "csv"],
  ] as const)("%s", async (_label, text, format) => {
    expect(expectRows(await importTaskFile({ name: "download", bytes: bytes(text) })).format).toBe(format);
  });

  it("Parquet, by its magic bytes", async () => {
    expect(expectRows(await importTaskFile({ name: "data.bin", bytes: nestedParquet() })).format).toBe("parquet");
  });
});

describe("importTaskFile: one bad row in 10,000 is named, and nothing is imported", () => {
  const good = (i: number) => ({ question: `question ${i}`, answer: i });

  it("JSON Lines: bad JSON on row 5031 (line 5032, after a blank line)", async () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify(good(i + 1)));
    lines[5030] = '{"question": "question 5031", "answer": }';
    const r = expectErrors(await importTaskFile({ name: "big.jsonl", bytes: bytes([lines[0], "", ...lines.slice(1)].join("\n")) }));
    expect(r.errors).toEqual([{ row: 5031, line: 5032, column: 41, message: "invalid JSON: expected a value" }]);
    expect(formatRowError(r.errors[0]!, "big.jsonl")).toBe("big.jsonl row 5031 (line 5032): invalid JSON: expected a value");
  });

  it("JSON array: row 7000 is not an object", async () => {
    const items: unknown[] = Array.from({ length: 10_000 }, (_, i) => good(i + 1));
    items[6999] = 42;
    const text = "[\n" + items.map((x) => JSON.stringify(x)).join(",\n") + "\n]\n";
    const r = expectErrors(await importTaskFile({ name: "big.json", bytes: bytes(text) }));
    expect(r.errors).toEqual([{ row: 7000, line: 7001, message: "each row must be a JSON object, got a number" }]);
  });

  it("JSON: a syntax error is placed at its line and column", async () => {
    const r = expectErrors(await importTaskFile({ name: "t.json", bytes: bytes('[\n  {"a": 1},\n  {"a": 2,}\n]') }));
    expect(r.errors).toEqual([{ line: 3, column: 11, message: "invalid JSON: expected a key in double quotes (a trailing comma?)" }]);
  });

  it("JSON and JSON Lines: a row nested past MAX_JSON_DEPTH is refused at its line, before anything parses it", async () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const json = expectErrors(await importTaskFile({ name: "t.json", bytes: bytes(`[\n  {"a": 1},\n  {"a": ${deep}}\n]`) }));
    expect(json.errors).toEqual([{ line: 3, column: 9 + MAX_JSON_DEPTH - 2, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
    const lines = expectErrors(await importTaskFile({ name: "t.jsonl", bytes: bytes(`{"a": 1}\n{"a": ${deep}}\n`) }));
    expect(lines.errors).toEqual([{ row: 2, line: 2, column: 7 + MAX_JSON_DEPTH - 1, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
  });

  it("reports every bad row, capped at 50 plus a count of the rest", async () => {
    const text = Array.from({ length: 10_000 }, (_, i) => (i % 2 === 0 ? "[1]" : "{}")).join("\n");
    const r = expectErrors(await importTaskFile({ name: "t.jsonl", bytes: bytes(text) }));
    expect(r.errorCount).toBe(5_000);
    expect(r.errors).toHaveLength(51);
    expect(r.errors[50]).toMatchObject({ row: 101, line: 101, message: expect.stringMatching(/^4,950 more errors/) });
  });
});

describe("importTaskFile: limits and refusals", () => {
  it("refuses a file over the byte limit before reading it, stating both sizes", async () => {
    const r = expectErrors(await importTaskFile({ name: "huge.csv", bytes: new Uint8Array(MAX_TASKS_BYTES + 1) }));
    expect(formatRowError(r.errors[0]!, "huge.csv")).toBe(
      "huge.csv: the file is 50 MB (50,000,001 bytes); the limit is 50 MB (50,000,000 bytes). " +
        "Upload a sample of the rows (a run only draws a few thousand tasks) or drop columns the scenario does not use.",
    );
  });

  it.each([
    ["t.jsonl", "{}\n".repeat(MAX_TASK_ROWS + 1)],
    ["t.json", JSON.stringify(Array.from({ length: MAX_TASK_ROWS + 1 }, () => ({})))],
    ["t.csv", "a\n" + "1\n".repeat(MAX_TASK_ROWS + 1)],
  ])("refuses more rows than the limit: %s", async (name, text) => {
    const r = expectErrors(await importTaskFile({ name, bytes: bytes(text) }));
    expect(r.errors.map((e) => e.message)).toEqual([
      "the file has 100,001 rows; the limit is 100,000. Upload a sample of the rows (a run only draws a few thousand tasks).",
    ]);
  });

  it("accepts exactly the row limit", async () => {
    expect(expectRows(await importTaskFile({ name: "t.jsonl", bytes: bytes("{}\n".repeat(MAX_TASK_ROWS)) })).rows).toHaveLength(MAX_TASK_ROWS);
  });

  it("refuses text that is not UTF-8 instead of garbling it", async () => {
    const latin1 = new Uint8Array([0x71, 0x0a, 0x63, 0x61, 0x66, 0xe9, 0x0a]); // "q\ncafé\n" in Latin-1
    const r = expectErrors(await importTaskFile({ name: "excel.csv", bytes: latin1 }));
    expect(r.errors[0]?.message).toContain("not UTF-8");
  });

  it("says what to do with a compressed file or a workbook", async () => {
    const gz = expectErrors(await importTaskFile({ name: "train.jsonl.gz", bytes: new Uint8Array([0x1f, 0x8b]) }));
    expect(gz.errors[0]?.message).toContain("decompress it first");
    const xlsx = expectErrors(await importTaskFile({ name: "tasks.xlsx", bytes: new Uint8Array([0x50, 0x4b]) }));
    expect(xlsx.errors[0]?.message).toContain("save the sheet as CSV");
  });

  it.each([
    ["empty.jsonl", "\n\n"],
    ["empty.json", "[]"],
    ["header-only.csv", "question,answer\n"],
  ])("refuses a file with no rows: %s", async (name, text) => {
    expect(expectErrors(await importTaskFile({ name, bytes: bytes(text) })).errors[0]?.message).toMatch(/no rows|empty/);
  });

  it("refuses a .json file that is one object, not a list of rows", async () => {
    const r = expectErrors(await importTaskFile({ name: "config.json", bytes: bytes('{"model": "x"}') }));
    expect(r.errors[0]?.message).toBe('expected an array of task objects, or an object whose "data" is one; the file holds an object');
  });
});
