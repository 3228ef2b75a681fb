import { describe, expect, it } from "vitest";
import { exactMatch, normalizeForMatch, regexFind, regexMatch } from "./match";

describe("exactMatch", () => {
  const matches: Array<[string, string | string[]]> = [
    ["Paris", "Paris"],
    ["paris", "Paris"],
    ["  Paris.  ", "paris"],
    ["**Paris**", "Paris"],
    ['"Paris!"', "Paris"],
    ["“Paris”", "Paris"],
    ["(B)", "B"],
    ["B)", "b"],
    ["New   York\nCity", "new york city"],
    ["Ｐａｒｉｓ", "Paris"], // fullwidth
    ["don’t", "don't"],
    ["Lyon", ["Paris", "Lyon"]],
    ["-5.", "-5"],
    ["", ""],
  ];
  it.each(matches)("%j matches %j", (output, expected) => {
    expect(exactMatch(output, expected)).toBe(true);
  });

  const misses: Array<[string | null | undefined, string | string[]]> = [
    ["Paris, France", "Paris"],
    ["Pari", "Paris"],
    ["-5", "5"],
    [".5", "5"],
    ["Marseille", ["Paris", "Lyon"]],
    ["Paris", []],
    [null, "Paris"],
    [undefined, ""],
    ["x", ""],
  ];
  it.each(misses)("%j does not match %j", (output, expected) => {
    expect(exactMatch(output, expected)).toBe(false);
  });

  it("honours its options", () => {
    expect(exactMatch("Paris", "paris", { caseSensitive: true })).toBe(false);
    expect(exactMatch("Paris.", "Paris", { stripPunctuation: false })).toBe(false);
    expect(exactMatch(" Paris ", "Paris", { stripPunctuation: false })).toBe(true);
    expect(exactMatch(" Paris ", "Paris", { stripPunctuation: false, trim: false })).toBe(false);
    expect(exactMatch("New  York", "New York", { collapseWhitespace: false })).toBe(false);
  });

  it("is linear on long punctuation runs", () => {
    const t0 = Date.now();
    expect(normalizeForMatch(`${".".repeat(200_000)}a${".".repeat(200_000)}`)).toBe(`${".".repeat(200_000)}a`);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});

describe("regexMatch / regexFind", () => {
  it("searches anywhere, case-insensitively for string patterns", () => {
    expect(regexMatch("Answer: 42.", "answer: 42")).toBe(true);
    expect(regexMatch("Answer: 42.", "answer: 42", { caseSensitive: true })).toBe(false);
    expect(regexMatch("Answer: 42.", /answer: 42/)).toBe(false); // a RegExp keeps its own flags
    expect(regexMatch("Answer: 42.", /answer: 42/i)).toBe(true);
    expect(regexMatch(null, ".*")).toBe(false);
  });

  it("matches the whole output in full mode, after stripping punctuation", () => {
    expect(regexMatch("Answer: 42.", "answer: \\d+", { full: true })).toBe(true);
    expect(regexMatch("**Answer: 42**", "answer: \\d+", { full: true })).toBe(true);
    expect(regexMatch("So, Answer: 42.", "answer: \\d+", { full: true })).toBe(false);
    expect(regexMatch("x\n42", /^\d+$/m, { full: true })).toBe(false);
    expect(regexMatch("x\n42", /^\d+$/m)).toBe(true);
  });

  it("returns groups of the last match by default", () => {
    const text = "Answer: 3. Wait — Answer: 4.";
    expect(regexFind(text, "answer: (\\d+)")?.groups).toEqual(["4"]);
    expect(regexFind(text, "answer: (\\d+)", { occurrence: "first" })?.groups).toEqual(["3"]);
    const named = regexFind(text, /answer: (?<n>\d+)/gi);
    expect(named).toMatchObject({ match: "Answer: 4", named: { n: "4" }, index: 18 });
    expect(regexFind("Answer: 42.", "answer: (\\d+)", { full: true })?.groups).toEqual(["42"]);
    expect(regexFind("nothing", "\\d")).toBeNull();
  });

  it("terminates on patterns that match the empty string", () => {
    expect(regexFind("abc", "x*")).toMatchObject({ match: "", index: 3 });
  });

  it("reports an invalid pattern clearly", () => {
    expect(() => regexMatch("x", "(")).toThrow(/invalid regex pattern "\("/);
  });

  it("searches only the tail of a very long output", () => {
    const text = `Answer: 1${" ".repeat(200)}`;
    expect(regexMatch(text, "answer", { maxLength: 100 })).toBe(false);
    expect(regexMatch(text, "answer", { maxLength: 300 })).toBe(true);
    expect(regexMatch(text, "answer: 1", { full: true, maxLength: 5 })).toBe(false);
  });
});
