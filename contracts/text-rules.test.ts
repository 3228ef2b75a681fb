import { describe, expect, it } from "vitest";
import { z } from "zod";
import { findTextIssue, findTextProblem, formatTextPath, multiLine, NUL_MESSAGE, oneLine, textProblem, urlTextProblem } from "./text-rules";

describe("text rules", () => {
  it("NUL is refused in every kind of text", () => {
    for (const kind of ["any", "text", "line"] as const) expect(textProblem("a\u0000b", kind)).toBe(NUL_MESSAGE);
    expect(NUL_MESSAGE).toBe("contains a NUL character (\\u0000)");
  });

  it("one-line fields refuse every control character, tab and line breaks included", () => {
    expect(textProblem("plain name ✓", "line")).toBeNull();
    for (const [ch, cp] of [["\t", "0009"], ["\n", "000A"], ["\r", "000D"], ["\u001b", "001B"], ["\u007f", "007F"]] as const) {
      expect(textProblem(`a${ch}b`, "line")).toMatch(new RegExp(`^contains a control character \\(U\\+${cp}\\)`));
    }
  });

  it("one-line fields refuse bidi overrides and isolates and the line and paragraph separators; multi-line text keeps them", () => {
    for (const cp of ["202A", "202B", "202C", "202D", "202E", "2066", "2067", "2068", "2069"]) {
      expect(textProblem(`a${String.fromCharCode(parseInt(cp, 16))}b`, "line")).toMatch(new RegExp(`^contains a bidirectional control character \\(U\\+${cp}\\)`));
    }
    for (const cp of ["2028", "2029"]) expect(textProblem(`a${String.fromCharCode(parseInt(cp, 16))}b`, "line")).toMatch(new RegExp(`^contains a line or paragraph separator \\(U\\+${cp}\\)`));
    // Right-to-left text itself is fine (Hebrew, Arabic), and so are the marks around U+202A (U+200F RLM).
    expect(textProblem("שלום עולם \u200f", "line")).toBeNull();
    expect(textProblem("notes \u202e reversed", "text")).toBeNull();
  });

  it("multi-line text allows tab, LF and CR, and nothing else below U+0020", () => {
    expect(textProblem("line 1\n\tline 2\r\n", "text")).toBeNull();
    expect(textProblem("bell\u0007", "text")).toMatch(/U\+0007/);
    expect(textProblem("esc\u001b[2J", "text")).toMatch(/U\+001B/);
    // File contents ("any"): only NUL.
    expect(textProblem("form\ffeed\u001b", "any")).toBeNull();
  });

  it("zod helpers put the problem on the field", () => {
    const schema = z.object({ name: oneLine(z.string().trim().min(1).max(20)), notes: multiLine(z.string()) });
    expect(schema.safeParse({ name: "  ok  ", notes: "a\nb" })).toEqual({ success: true, data: { name: "ok", notes: "a\nb" } });
    const bad = schema.safeParse({ name: "a\nb", notes: "\u0007" });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`)).toEqual([
      expect.stringMatching(/^name: contains a control character \(U\+000A\)/),
      expect.stringMatching(/^notes: contains a control character \(U\+0007\)/),
    ]);
  });

  it("finds the first bad string anywhere in a value and names its path", () => {
    expect(findTextProblem({ a: [1, "ok", { b: "x\u0000" }] })).toBe(`a.2.b: ${NUL_MESSAGE}`);
    expect(findTextProblem({ files: { "x\u0000.ts": "" } })).toBe(`files.x\\u0000.ts: the key ${NUL_MESSAGE}`);
    expect(findTextProblem("\u0000")).toBe(`(input): ${NUL_MESSAGE}`);
    expect(findTextProblem({ name: "a\nb", notes: "a\nb" }, (p) => (p[0] === "name" ? "line" : "any"))).toMatch(/^name: contains a control character/);
    expect(findTextProblem({ ok: ["fine", { deeper: "text\twith tab" }], d: new Date(0) })).toBeNull();
  });

  it("findTextIssue gives the path as an array, for doors that print it their own way", () => {
    expect(findTextIssue({ a: [{ b: "x\u0000" }] })).toEqual({ path: ["a", 0, "b"], problem: NUL_MESSAGE });
    expect(findTextIssue({ ok: "fine" })).toBeNull();
  });

  it("walks a value of any depth without recursion", () => {
    let deep: unknown = "x\u0000";
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findTextProblem(deep)).toMatch(new RegExp(`${NUL_MESSAGE.replace(/[()\\]/g, "\\$&")}$`));
  });

  it("escapes control characters in the path it prints", () => {
    expect(formatTextPath(["a\u001b", 3])).toBe("a\\u001b.3");
    expect(formatTextPath(["a\u202e"])).toBe("a\\u202e");
  });

  it("finds a NUL in an address's path or query", () => {
    expect(urlTextProblem(new URL("http://x/api/export/runs?tag=ok&status=a&status=b"))).toBeNull();
    expect(urlTextProblem(new URL("http://x/api/export/runs?status=a&tag=x%00"))).toBe(`tag: ${NUL_MESSAGE}`);
    expect(urlTextProblem(new URL("http://x/api/runs/r%00/events"))).toBe(`path: ${NUL_MESSAGE}`);
    expect(urlTextProblem(new URL("http://x/api/runs/%E0%A4%A/events"))).toBeNull();
  });
});
