import { describe, expect, it } from "vitest";
import { MAX_TASKS_JSONL_BYTES, MAX_TASK_ROWS } from "./limits";
import { parseTasks } from "./parse-tasks";
import { toTasksJsonl } from "./write";
import { MAX_JSON_DEPTH } from "../json-depth";

function expectFail(text: string) {
  const r = parseTasks(text);
  if (r.ok) throw new Error("expected parseTasks to fail");
  return r;
}

describe("parseTasks", () => {
  it("handles a BOM, CRLF and blank lines, keeping real line numbers", () => {
    const r = parseTasks('\uFEFF{"a":1}\r\n\r\n{"a":2,"split":"val"}\r\n{"a":3}\n');
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.train).toEqual([
      { index: 0, line: 1, split: "train", data: { a: 1 } },
      { index: 1, line: 4, split: "train", data: { a: 3 } },
    ]);
    expect(r.val).toEqual([{ index: 0, line: 3, split: "val", data: { a: 2 } }]);
  });

  it("reports a JSON syntax error at its line and column", () => {
    const bad = '{"a": 1, "b": x}';
    const r = expectFail(`{"a":1}\n${bad}\n{"a":1,}\n`);
    expect(r.diagnostics).toHaveLength(2);
    expect(r.diagnostics[0]).toMatchObject({ file: "tasks.jsonl", line: 2, column: bad.indexOf("x") + 1, severity: "error" });
    expect(r.diagnostics[0]?.message).toMatch(/^tasks\.jsonl line 2: invalid JSON: unexpected character/);
    expect(r.diagnostics[1]).toMatchObject({ line: 3, column: 8 });
    expect(r.diagnostics[1]?.message).toContain("trailing comma");
    expect(r.errors[0]).toEqual({ line: 2, column: bad.indexOf("x") + 1, message: expect.stringMatching(/^invalid JSON/) });
  });

  it("refuses a row nested past MAX_JSON_DEPTH before parsing it, at its line and bracket", () => {
    const deep = `{"word": "deep", "x": ${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    const r = expectFail(`{"a":1}\n{"a":2}\n${deep}\n{"a":4}\n`);
    expect(r.errors).toEqual([{ line: 3, column: 23 + MAX_JSON_DEPTH - 1, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }]);
    expect(r.diagnostics[0]?.message).toBe(`tasks.jsonl line 3: nested deeper than ${MAX_JSON_DEPTH} levels`);
    // Exactly at the cap is fine.
    const ok = parseTasks(`{"x": ${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}\n`);
    expect(ok.ok).toBe(true);
  });

  it("names the split field when its value is wrong", () => {
    const r = expectFail('{"a":1}\n{"a":5,"split":"test"}\n');
    expect(r.diagnostics[0]?.message).toBe('tasks.jsonl line 2, field "split": must be "train" or "val", got "test"');
  });

  it("caps 10,000 bad lines at 50 diagnostics plus one saying how many more", () => {
    const text = Array.from({ length: 10_000 }, (_, i) => `{"n": ${i},`).join("\n");
    const r = expectFail(text);
    expect(r.diagnostics).toHaveLength(51);
    expect(r.diagnostics.slice(0, 50).map((d) => d.line)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(r.diagnostics[50]).toMatchObject({ line: 51, column: 1 });
    expect(r.diagnostics[50]?.message).toBe(
      "tasks.jsonl line 51: 9,950 more errors from here on, not listed (only the first 50 are); fix these and check again",
    );
  });

  it("names exactly the one bad line in 10,000", () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ q: `question ${i + 1}`, answer: i }));
    lines[5030] = '{"q": "question 5031", "answer": }';
    const r = expectFail(lines.join("\n"));
    expect(r.diagnostics).toEqual([
      { file: "tasks.jsonl", line: 5031, column: 34, severity: "error", message: "tasks.jsonl line 5031: invalid JSON: expected a value" },
    ]);
  });

  it("refuses a file over the size limit without parsing it, naming both sizes", () => {
    // tasks.jsonl lives inside the experiment: its limit is the experiment's 8 MB.
    const r = expectFail(`{"a":"${"x".repeat(MAX_TASKS_JSONL_BYTES)}"}`);
    expect(r.diagnostics).toHaveLength(1);
    expect(r.diagnostics[0]?.message).toBe(
      "tasks.jsonl: the file is 8 MB (8,000,008 bytes); the limit is 8 MB (8,000,000 bytes). " +
        "Upload a sample of the rows (a run only draws a few thousand tasks) or drop columns the scenario does not use.",
    );
  });

  it("counts multi-byte characters toward the size limit", () => {
    // 3 million 3-byte characters: 9 MB as UTF-8, although only 3 million UTF-16 units.
    const r = expectFail(`{"a":"${"€".repeat(3_000_000)}"}`);
    expect(r.diagnostics[0]?.message).toContain("(9,000,008 bytes)");
  });

  it("refuses more rows than the limit", () => {
    const r = expectFail("{}\n".repeat(MAX_TASK_ROWS + 1));
    expect(r.diagnostics.map((d) => d.message)).toEqual([
      "tasks.jsonl: the file has 100,001 rows; the limit is 100,000. Upload a sample of the rows (a run only draws a few thousand tasks).",
    ]);
    expect(parseTasks("{}\n".repeat(MAX_TASK_ROWS)).ok).toBe(true);
  });

  it("needs at least one training task", () => {
    expect(expectFail('{"a":1,"split":"val"}\n').diagnostics[0]?.message).toContain("no training tasks");
    expect(parseTasks("\n\n").ok).toBe(false);
  });

  it("parses 10,000 rows (about 4 MB) quickly", () => {
    const text = Array.from({ length: 10_000 }, (_, i) =>
      JSON.stringify({ question: `${i}: ${"lorem ipsum dolor sit amet ".repeat(14)}`, answer: i, split: i % 10 === 0 ? "val" : "train" }),
    ).join("\n");
    const t0 = performance.now();
    const r = parseTasks(text);
    const ms = performance.now() - t0;
    console.log(`parseTasks: 10,000 rows, ${(text.length / 1e6).toFixed(1)} MB in ${ms.toFixed(0)} ms`);
    expect(text.length).toBeGreaterThan(3_500_000);
    if (!r.ok) throw new Error("expected ok");
    expect([r.train.length, r.val.length]).toEqual([9_000, 1_000]);
    expect(ms).toBeLessThan(5_000); // a bound for a hang, not a benchmark: it takes tens of ms
  });
});

describe("toTasksJsonl", () => {
  it("writes one compact object per line with split last on validation rows, and parses back the same", () => {
    const rows = [
      { split: "train" as const, data: { q: "a", n: [1, 2], o: { k: null } } },
      { split: "val" as const, data: { q: "b\nc" } },
      { data: { q: "d", split: "val" } }, // a stray split key in the data does not override the row's split
    ];
    const text = toTasksJsonl(rows);
    expect(text).toBe('{"q":"a","n":[1,2],"o":{"k":null}}\n{"q":"b\\nc","split":"val"}\n{"q":"d"}\n');
    const r = parseTasks(text);
    if (!r.ok) throw new Error("expected ok");
    expect(r.train.map((t) => t.data)).toEqual([rows[0]!.data, { q: "d" }]);
    expect(r.val.map((t) => t.data)).toEqual([rows[1]!.data]);
  });
});
