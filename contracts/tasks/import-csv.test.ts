import { describe, expect, it } from "vitest";
import { importTaskFile } from "./import-file";
import { formatRowError } from "./row-error";
import type { ImportResult } from "./import-types";

const csv = (text: string, name = "t.csv") => importTaskFile({ name, bytes: new TextEncoder().encode(text) });
function rows(r: ImportResult) {
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.rows;
}
function errors(r: ImportResult) {
  if (r.ok) throw new Error("expected errors");
  expect(r).not.toHaveProperty("rows");
  return r.errors;
}

describe("CSV column types", () => {
  it("types whole columns: numbers, booleans, text; empty cells are null in typed columns and '' in text", async () => {
    const r = rows(await csv("id,score,ok,answer,note\n1,0.5,TRUE,72,hi\n2,,false,1/2,\n3,1e3,,abc,x\n"));
    expect(r.map((x) => x.data)).toEqual([
      { id: 1, score: 0.5, ok: true, answer: "72", note: "hi" },
      { id: 2, score: null, ok: false, answer: "1/2", note: "" },
      { id: 3, score: 1000, ok: null, answer: "abc", note: "x" },
    ]);
  });

  it("keeps as text what a number would change: leading zeros, thousands separators, ids beyond 2^53", async () => {
    const r = rows(await csv("zip,big,money\n02139,12345678901234567890,\"1,000\"\n10001,1,5\n"));
    expect(r.map((x) => x.data)).toEqual([
      { zip: "02139", big: "12345678901234567890", money: "1,000" },
      { zip: "10001", big: "1", money: "5" },
    ]);
  });

  it("keeps JSON in a cell as text (the scenario decides what it means)", async () => {
    expect(rows(await csv('q,tags\nx,"[""a"",""b""]"\n'))[0]?.data).toEqual({ q: "x", tags: '["a","b"]' });
  });

  it("reads a one-column file", async () => {
    expect(rows(await csv("question\nwhat?\nwhy?\n")).map((x) => x.data)).toEqual([{ question: "what?" }, { question: "why?" }]);
  });
});

describe("CSV rows and lines", () => {
  it("gives each row the line it starts on, across quoted fields with newlines and blank lines", async () => {
    const r = rows(await csv('q,a\r\n"line one\r\nline two",1\r\n\r\nplain,2\r\n"x\n\ny",3\n'));
    expect(r.map(({ row, line }) => [row, line])).toEqual([
      [1, 2],
      [2, 5],
      [3, 6],
    ]);
    expect(r[0]?.data).toEqual({ q: "line one\r\nline two", a: 1 });
  });

  it("names the one row in 10,000 with the wrong number of fields, by row and line, and imports nothing", async () => {
    const body = Array.from({ length: 10_000 }, (_, i) => `question ${i + 1},${i + 1}`);
    body[2] = '"a question\nover two lines",3'; // rows after it start one line later than row + 1
    body[9_998] = "question 9999,9999,oops";
    const e = errors(await csv(["question,answer", ...body].join("\n"), "big.csv"));
    expect(e).toEqual([
      { row: 9_999, line: 10_001, message: "has 3 fields but the header has 2 (an unquoted delimiter or quote in a value?)" },
    ]);
    expect(formatRowError(e[0]!, "big.csv")).toBe(
      "big.csv row 9999 (line 10001): has 3 fields but the header has 2 (an unquoted delimiter or quote in a value?)",
    );
  });

  it("reports too few fields and an unclosed quote at their rows", async () => {
    const e = errors(await csv('q,a\nx\ny,2\n"z,3\n'));
    expect(e.map(({ row, line }) => [row, line])).toEqual([
      [1, 2],
      [3, 4],
      [3, 4],
    ]);
    expect(e[1]?.message).toContain("Quoted field unterminated");
  });

  it("needs a header with a name for every column, each used once", async () => {
    const e = errors(await csv(",q,a,q\n0,x,1,y\n"));
    expect(e).toEqual([
      { line: 1, message: "column 1 has no name in the header row (a pandas index column? save with index=False)" },
      { line: 1, field: "q", message: "column name used twice in the header (columns 2 and 4)" },
    ]);
  });

  it("reads a column named __proto__ as a field, not as the row's prototype", async () => {
    const data = rows(await csv("__proto__,q\nx,y\n"))[0]?.data;
    expect(Object.getPrototypeOf(data)).toBe(Object.prototype);
    expect(Object.keys(data ?? {})).toEqual(["__proto__", "q"]);
  });
});

describe("TSV", () => {
  it("splits on tabs only, so commas stay in values", async () => {
    const r = rows(await csv("q\ta\nhello, world\t1\n", "t.tsv"));
    expect(r[0]?.data).toEqual({ q: "hello, world", a: 1 });
  });
});
