import { describe, expect, it } from "vitest";
import { parquetWriteBuffer } from "hyparquet-writer";
import { importTaskFile } from "./import-file";
import { toJsonValue } from "./import-parquet";
import { MAX_TASK_ROWS } from "./limits";
import type { ImportResult } from "./import-types";

const parquet = (buffer: ArrayBuffer, name = "t.parquet") => importTaskFile({ name, bytes: new Uint8Array(buffer) });
function rows(r: ImportResult) {
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.rows;
}
function errors(r: ImportResult) {
  if (r.ok) throw new Error("expected errors");
  expect(r).not.toHaveProperty("rows");
  return r.errors;
}

describe("Parquet import", () => {
  it("reads every row group into JSON values: strings, ints, INT64, floats, booleans, timestamps, dates, lists, structs", async () => {
    const n = 5;
    const buffer = parquetWriteBuffer({
      columnData: [
        { name: "question", data: ["q1", "q2", "q3", "q4", null] },
        { name: "i32", data: [1, -2, 3, 4, 5] },
        { name: "i64", data: [10n, 9_007_199_254_740_993n, -3n, 0n, 1n] },
        { name: "f64", data: [0.25, Number.NaN, 1e300, -0.5, 2] },
        { name: "f32", data: new Float32Array([1.5, 2.5, 3.5, 4.5, 5.5]) },
        { name: "flag", data: [true, false, true, false, true] },
        { name: "at", data: [new Date(0), new Date(1_700_000_000_000), new Date(5), new Date(6), new Date(7)] },
        { name: "day", data: [new Date("2024-02-29"), new Date("2024-03-01"), new Date(0), new Date(0), new Date(0)] },
        { name: "tags", data: [["a", "b"], [], ["c"], null, ["d"]] },
        { name: "scores", data: [[1n, 2n], [3n], [], [4n], [5n, 6n, 7n]] },
        { name: "meta", data: Array.from({ length: n }, (_, i) => ({ level: i, source: i % 2 ? "x" : null })) },
      ],
      schema: [
        { name: "root", num_children: 11 },
        { name: "question", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
        { name: "i32", type: "INT32", repetition_type: "REQUIRED" },
        { name: "i64", type: "INT64", repetition_type: "REQUIRED" },
        { name: "f64", type: "DOUBLE", repetition_type: "REQUIRED" },
        { name: "f32", type: "FLOAT", repetition_type: "REQUIRED" },
        { name: "flag", type: "BOOLEAN", repetition_type: "REQUIRED" },
        { name: "at", type: "INT64", converted_type: "TIMESTAMP_MILLIS", repetition_type: "REQUIRED" },
        { name: "day", type: "INT32", converted_type: "DATE", repetition_type: "REQUIRED" },
        { name: "tags", converted_type: "LIST", repetition_type: "OPTIONAL", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        { name: "element", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "REQUIRED" },
        { name: "scores", converted_type: "LIST", repetition_type: "REQUIRED", num_children: 1 },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        { name: "element", type: "INT64", repetition_type: "REQUIRED" },
        { name: "meta", repetition_type: "REQUIRED", num_children: 2 },
        { name: "level", type: "INT32", repetition_type: "REQUIRED" },
        { name: "source", type: "BYTE_ARRAY", converted_type: "UTF8", repetition_type: "OPTIONAL" },
      ],
      rowGroupSize: 2, // three row groups: 2 + 2 + 1
    });
    const r = rows(await parquet(buffer));
    expect(r.map((x) => x.row)).toEqual([1, 2, 3, 4, 5]);
    expect(r[0]?.data).toEqual({
      question: "q1",
      i32: 1,
      i64: 10,
      f64: 0.25,
      f32: 1.5,
      flag: true,
      at: "1970-01-01T00:00:00.000Z",
      day: "2024-02-29T00:00:00.000Z",
      tags: ["a", "b"],
      scores: [1, 2],
      meta: { level: 0, source: null },
    });
    expect(r[1]?.data).toMatchObject({ i64: "9007199254740993", f64: null, at: "2023-11-14T22:13:20.000Z", tags: [], scores: [3] });
    expect(r[3]?.data).toMatchObject({ tags: null, meta: { level: 3, source: "x" } });
    expect(r[4]?.data).toMatchObject({ question: null, scores: [5, 6, 7] });
    // What tasks.jsonl will hold: plain JSON, nothing lost in stringify.
    for (const { data } of r) expect(JSON.parse(JSON.stringify(data))).toEqual(data);
  });

  it("decodes unannotated binary that is UTF-8 as text, and other bytes as base64", async () => {
    const buffer = parquetWriteBuffer({
      columnData: [{ name: "blob", data: [new TextEncoder().encode("héllo"), new Uint8Array([0xff, 0x00, 0xfe])] }],
      schema: [
        { name: "root", num_children: 1 },
        { name: "blob", type: "BYTE_ARRAY", repetition_type: "REQUIRED" },
      ],
    });
    expect(rows(await parquet(buffer)).map((x) => x.data)).toEqual([{ blob: "héllo" }, { blob: "/wD+" }]);
  });

  it("refuses more rows than the limit from the footer, before decoding them", async () => {
    const buffer = parquetWriteBuffer({ columnData: [{ name: "i", data: new Int32Array(MAX_TASK_ROWS + 1) }] });
    expect(errors(await parquet(buffer)).map((e) => e.message)).toEqual([
      "the file has 100,001 rows; the limit is 100,000. Upload a sample of the rows (a run only draws a few thousand tasks).",
    ]);
  });

  it("names a compression codec it cannot read and says how to re-save", async () => {
    // Labelled ZSTD (stored as is): enough to reach the codec check.
    const buffer = parquetWriteBuffer({ columnData: [{ name: "q", data: ["a"] }], codec: "ZSTD", compressors: { ZSTD: (x: Uint8Array) => x } });
    expect(errors(await parquet(buffer))[0]?.message).toBe(
      'the file is compressed with ZSTD, which cannot be read here; re-save it with snappy compression (pandas/pyarrow: compression="snappy") or as JSON Lines',
    );
  });

  it("refuses a truncated file and one that is not Parquet", async () => {
    const whole = new Uint8Array(parquetWriteBuffer({ columnData: [{ name: "q", data: ["a", "b"] }] }));
    expect(errors(await importTaskFile({ name: "t.parquet", bytes: whole.subarray(0, whole.length - 10) }))[0]?.message).toContain("not a Parquet file");
    const fakeFooter = new TextEncoder().encode("PAR1 not really parquet PAR1");
    expect(errors(await importTaskFile({ name: "t.parquet", bytes: fakeFooter }))[0]?.message).toContain("cannot read the Parquet footer");
    expect(errors(await importTaskFile({ name: "t.parquet", bytes: new TextEncoder().encode("a,b\n1,2\n") }))[0]?.message).toContain(
      "not a Parquet file",
    );
  });

  it("reads a file that is a view into a larger buffer", async () => {
    const whole = new Uint8Array(parquetWriteBuffer({ columnData: [{ name: "q", data: ["a"] }] }));
    const padded = new Uint8Array(whole.length + 8);
    padded.set(whole, 4);
    expect(rows(await importTaskFile({ name: "t.parquet", bytes: padded.subarray(4, 4 + whole.length) })).map((x) => x.data)).toEqual([
      { q: "a" },
    ]);
  });
});

describe("toJsonValue", () => {
  it("makes typed arrays, maps and non-finite numbers JSON", () => {
    expect(toJsonValue({ a: new BigInt64Array([1n, 2n]), b: new Map([[1, Infinity]]), c: undefined, d: new Date(Number.NaN) })).toEqual({
      a: [1, 2],
      b: { "1": null },
      c: null,
      d: null,
    });
  });
});
