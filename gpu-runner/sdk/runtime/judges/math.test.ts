import { describe, expect, it } from "vitest";
import { extractAnswer } from "./extract-answer";
import { mathEqual } from "./math";
import { parseMathValue } from "./math-value";

/** "n/d" or "n" for a parsed value, "null" when not a number, "%" appended for percentages. */
function show(text: string): string {
  const v = parseMathValue(text);
  if (!v) return "null";
  return `${v.num}${v.den === 1n ? "" : `/${v.den}`}${v.percent ? " %" : ""}`;
}

describe("parseMathValue", () => {
  const cases: Array<[string, string]> = [
    // integers, any size
    ["42", "42"],
    ["-7", "-7"],
    ["+7", "7"],
    ["− 7", "-7"],
    ["007", "7"],
    ["0", "0"],
    ["-0", "0"],
    ["1000000000000000000000000000001", "1000000000000000000000000000001"],
    // thousands separators
    ["1,234", "1234"],
    ["1,234,567", "1234567"],
    ["1,234,567.89", "123456789/100"],
    ["1 234", "1234"],
    ["1 234 567", "1234567"],
    ["1\\,234", "1234"],
    ["1{,}234", "1234"],
    ["12\u202f345", "12345"],
    // decimals
    ["0.5", "1/2"],
    [".5", "1/2"],
    ["0.50", "1/2"],
    ["-0.125", "-1/8"],
    ["3.", "3"],
    ["0.1", "1/10"],
    // scientific notation
    ["1e3", "1000"],
    ["1.5E-3", "3/2000"],
    ["2.5e+2", "250"],
    ["1e+21", "1000000000000000000000"],
    ["6.02 \\times 10^{23}", "602000000000000000000000"],
    ["3×10^-2", "3/100"],
    ["1.5 \\cdot 10^3", "1500"],
    ["2 x 10^3", "2000"],
    // fractions
    ["3/4", "3/4"],
    ["-3/4", "-3/4"],
    ["6/8", "3/4"],
    ["10 / 4", "5/2"],
    ["5/1", "5"],
    ["\\frac{3}{4}", "3/4"],
    ["\\dfrac{3}{4}", "3/4"],
    ["\\tfrac{3}{4}", "3/4"],
    ["\\frac34", "3/4"],
    ["\\frac 3 4", "3/4"],
    ["\\frac{-3}{4}", "-3/4"],
    ["\\frac{3}{-4}", "-3/4"],
    ["-\\frac{3}{4}", "-3/4"],
    ["\\frac{1.5}{3}", "1/2"],
    ["½", "1/2"],
    // mixed numbers
    ["1 1/2", "3/2"],
    ["-1 1/2", "-3/2"],
    ["2\\frac{1}{2}", "5/2"],
    ["2 \\frac{1}{2}", "5/2"],
    ["1½", "3/2"],
    ["1 234/1000", "617/500"],
    // percentages
    ["50%", "1/2 %"],
    ["50\\%", "1/2 %"],
    ["12.5 %", "1/8 %"],
    ["50 percent", "1/2 %"],
    ["-5%", "-1/20 %"],
    // currency and units
    ["$5", "5"],
    ["\\$5", "5"],
    ["$\\$5$", "5"],
    ["-$5", "-5"],
    ["$-5", "-5"],
    ["$1,234.50", "2469/2"],
    ["€3", "3"],
    ["3€", "3"],
    ["12 dollars", "12"],
    ["12 US dollars", "12"],
    ["5 cm", "5"],
    ["5cm", "5"],
    ["5 cm^2", "5"],
    ["5 \\text{cm}^2", "5"],
    ["5\\text{ cm}", "5"],
    ["9.8 m/s^2", "49/5"],
    ["60 miles per hour", "60"],
    ["3 apples", "3"],
    ["90^\\circ", "90"],
    ["90^{\\circ}", "90"],
    ["90°", "90"],
    ["3rd", "3"],
    ["2 million", "2000000"],
    ["1.5 billion dollars", "1500000000"],
    // LaTeX and markdown wrapping
    ["$42$", "42"],
    ["$$42$$", "42"],
    ["\\(42\\)", "42"],
    ["\\[42\\]", "42"],
    ["\\boxed{42}", "42"],
    ["\\boxed{\\frac{1}{2}}", "1/2"],
    ["\\fbox{7}", "7"],
    ["\\left( \\frac{1}{2} \\right)", "1/2"],
    ["(5)", "5"],
    ["(-5)", "-5"],
    ["{5}", "5"],
    ["**42**", "42"],
    ["'42'", "42"],
    ["42.", "42"],
    ["x = 5", "5"],
    ["x=5", "5"],
    ["\\theta = 30^\\circ", "30"],
    ["\\mathbf{5}", "5"],
    ["\\text{\\textbf{5}}", "5"],
    ["5\\!000", "5000"],
    // not one number
    ["", "null"],
    ["   ", "null"],
    ["abc", "null"],
    ["five", "null"],
    ["1, 2", "null"],
    ["1,2", "null"],
    ["3,5", "null"],
    ["12,34", "null"],
    ["1234,567", "null"],
    ["1,2345", "null"],
    ["1 2", "null"],
    ["1.2.3", "null"],
    ["3:30", "null"],
    ["3:30 pm", "null"],
    ["10 pm", "null"],
    ["2024-01-05", "null"],
    ["12/25/2024", "null"],
    ["5 March", "null"],
    ["1/0", "null"],
    ["\\frac{1}{0}", "null"],
    ["5 apples and 3 oranges", "null"],
    ["2 + 3", "null"],
    ["2^10", "null"],
    ["2\\pi", "null"],
    ["2 pi", "null"],
    ["\\sqrt{2}", "null"],
    ["5x", "null"],
    ["5 x", "null"],
    ["3i", "null"],
    ["1e", "null"],
    ["1e99999", "null"],
    ["1 \\times 10^{99999}", "null"],
    ["--5", "null"],
    ["(1, 2)", "null"],
    ["(1,234)", "null"],
    ["1 3/2", "null"],
    ["about 5", "null"],
    ["≈ 5", "null"],
    ["$", "null"],
    ["%", "null"],
    ["-", "null"],
    [".", "null"],
    ["\\frac{1}", "null"],
    ["\\boxed{5", "null"],
    ["5 because it is the answer to everything", "null"],
    ["2 dozen", "null"],
    ["3 quarters", "null"],
    ["5 thousands", "null"],
  ];
  it.each(cases)("%j → %s", (input, want) => {
    expect(show(input)).toBe(want);
  });

  it("rejects huge inputs quickly", () => {
    const t0 = Date.now();
    expect(parseMathValue("1".repeat(20_000))).toBeNull(); // over MAX_VALUE_CHARS
    expect(show("9".repeat(9_000))).toBe("9".repeat(9_000));
    expect(parseMathValue(`${"1,".repeat(4_000)}1`)).toBeNull();
    expect(parseMathValue(`5 ${".".repeat(9_000)} x`)).toBeNull();
    expect(parseMathValue(`${"(".repeat(4_000)}5${")".repeat(4_000)}`)).toBeNull();
    expect(parseMathValue(`${"{".repeat(4_000)}5`)).toBeNull();
    expect(parseMathValue(`\\text{${"\\text{".repeat(1_000)}5`)).toBeNull();
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it("is not fooled by non-strings", () => {
    expect(parseMathValue(undefined as unknown as string)).toBeNull();
    expect(parseMathValue(5 as unknown as string)).toBeNull();
  });
});

describe("extractAnswer", () => {
  const cases: Array<[string, string | null]> = [
    // \boxed wins, the last one, braces balanced
    ["So the answer is \\boxed{42}.", "42"],
    ["First \\boxed{1}, then \\boxed{2}.", "2"],
    ["$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"],
    ["\\boxed{\\text{{a}b}}", "\\text{{a}b}"],
    ["\\boxed 5", "5"],
    ["\\boxed 5$ and more", "5"],
    ["\\fbox{7}", "7"],
    ["\\boxed{3} then an empty \\boxed{}", "3"],
    ["\\boxed{12} ... the answer is 13", "12"],
    // a reply cut off inside its final box has no answer
    ["The answer is \\boxed{12", null],
    ["\\boxedthing 4", "4"],
    // answer markers
    ["The answer is 42.", "42"],
    ["The answer is 42. I hope it is correct.", "42"],
    ["Final Answer: The final answer is $5$. I hope it is correct.", "$5$"],
    ["**Answer:** 1,234 apples, since she had more.", "1,234 apples"],
    ["Answer: 3.5", "3.5"],
    ["answer = -7", "-7"],
    ["ANSWER IS 8!", "8"],
    ["Answer:\n\n42", "42"],
    ["Work...\n#### 72", "72"],
    ["The answer is $18 per week. Next year it is $20.", "$18 per week"],
    ["The answer is $x = 1, y = 2$, done", "$x = 1, y = 2$"],
    ["The answer is 3. Wait, no: the answer is 4.", "4"],
    ["To answer: we add 2 and 3.\nSo we get 5", "5"],
    // "=" on the last line
    ["Adding up:\n3 + 4 = 7.", "7"],
    ["so x = 12 apples", "12 apples"],
    ["a <= 5", "5"],
    // the last number
    ["She ends with 17 apples.", "17"],
    ["She had 1,234 dollars left", "1,234"],
    ["It costs $1,234,567.89 in total", "1,234,567.89"],
    ["-5 is it", "-5"],
    ["we get 10 - 3 or so 7 and then -2", "-2"],
    ["from 3 to 1/2", "1/2"],
    ["The meeting is at 3:30 with 4 people", "4"],
    ["On 2024-01-05 we had 3 cats", "3"],
    ["version 1.2.3 has 9 bugs", "9"],
    ["Using GPT-4 we got 12", "12"],
    ["x^2 + x2 + 5", "5"],
    ["Avogadro is 6.02e23", "6.02e23"],
    ["The value is -3.5e-2 roughly", "-3.5e-2"],
    ["It is 50%.", "50%"],
    ["half is \\frac{1}{2} here", "1/2"],
    ["the list 1, 2, 3", "3"],
    ["ratio 3:4", null],
    ["no numbers here", null],
    ["", null],
  ];
  it.each(cases)("%j → %j", (input, want) => {
    expect(extractAnswer(input)).toBe(want);
  });

  it("stays fast on adversarial replies", () => {
    const inputs = [
      "\\boxed{".repeat(50_000),
      `${"{".repeat(100_000)}\\boxed{1}`,
      "answer is ".repeat(20_000),
      "1,".repeat(100_000),
      "1-".repeat(100_000),
      "\\frac{1}{".repeat(20_000),
      `${"9".repeat(200_000)} is the answer`,
      `${"a ".repeat(200_000)}= 5`,
    ];
    for (const input of inputs) {
      const t0 = Date.now();
      extractAnswer(input);
      expect(Date.now() - t0).toBeLessThan(1_000);
    }
  });

  it("reads only the tail of a huge reply", () => {
    expect(extractAnswer(`\\boxed{1}${"x".repeat(200_000)} answer: 2`)).toBe("2");
  });
});

describe("mathEqual", () => {
  const equal: Array<[string | number, string | number | bigint]> = [
    ["42", 42],
    ["42", "42.0"],
    ["1,234", 1234],
    ["1 234", "1,234"],
    ["0.5", "1/2"],
    ["\\frac{1}{2}", 0.5],
    ["\\dfrac{3}{4}", "0.75"],
    ["1 1/2", "3/2"],
    ["$\\boxed{7}$", "7"],
    ["\\$12.00", "12"],
    ["12 dollars", 12],
    ["5 cm", "5"],
    ["50%", "0.5"],
    ["50%", "50"],
    ["50%", "50%"],
    ["1e3", 1000],
    ["1000000000000000000000000000000", "1e30"],
    ["1000000000000000000000000000000", 1e30],
    ["123456789012345678901234567890", 123456789012345678901234567890n],
    ["0.3", 0.3],
    ["-0.75", "-\\frac{3}{4}"],
    ["x = 5", "5"],
    [7, "7"],
    // not numbers: compared as cleaned LaTeX
    ["\\dfrac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}"],
    ["$(1, 2)$", "(1,2)"],
    ["\\pi", "\\pi"],
  ];
  it.each(equal)("%s = %s", (a, b) => {
    expect(mathEqual(a, b)).toBe(true);
  });

  const unequal: Array<[string | number | null | undefined, string | number]> = [
    ["41", 42],
    ["1,234", "1.234"],
    ["0.3333", "1/3"],
    ["1000000000000000000000000000001", "1e30"],
    ["3/4", "4/3"],
    ["50%", "5000%"],
    ["5 apples and 3", 5],
    ["1, 2", 1],
    ["3:30", "3.5"],
    ["2024-01-05", 2024],
    ["", ""],
    ["", 0],
    [null, 0],
    [undefined, "0"],
    ["five", 5],
    ["\\sqrt{2}", "1.41421356"],
    ["2\\pi", "2"],
    ["x^2", "x^3"],
    ["5", Number.NaN],
    ["5", Number.POSITIVE_INFINITY],
    ["-5", 5],
  ];
  it.each(unequal)("%j ≠ %j", (a, b) => {
    expect(mathEqual(a, b)).toBe(false);
  });

  it("is exact where floats are not", () => {
    expect(mathEqual("0.30000000000000004", "0.3")).toBe(false);
    expect(mathEqual(String(0.1 + 0.2), "3/10")).toBe(false);
    expect(mathEqual("0.1", 0.1)).toBe(true);
    expect(mathEqual("9007199254740993", "9007199254740992")).toBe(false);
  });

  it("applies a relative tolerance exactly", () => {
    expect(mathEqual("0.333", "1/3", { relTol: 0.001 })).toBe(true);
    expect(mathEqual("0.33", "1/3", { relTol: 0.001 })).toBe(false);
    expect(mathEqual("0.99", 1, { relTol: 0.01 })).toBe(true);
    expect(mathEqual("0.9899", 1, { relTol: 0.01 })).toBe(false);
    expect(mathEqual("-1", 1, { relTol: 0.5 })).toBe(false);
    expect(mathEqual("0", 0, { relTol: 0.1 })).toBe(true);
    expect(() => mathEqual("1", 1, { relTol: -1 })).toThrow(RangeError);
    expect(() => mathEqual("1", 1, { relTol: Number.NaN })).toThrow(RangeError);
  });

  it("reads percentages strictly on request", () => {
    expect(mathEqual("50%", "0.5", { percent: "strict" })).toBe(true);
    expect(mathEqual("50%", "50", { percent: "strict" })).toBe(false);
  });

  it("extracts from a whole solution on request", () => {
    const solution = "We add 3 and 4.\nThe answer is $\\boxed{7}$.";
    expect(mathEqual(solution, 7)).toBe(false);
    expect(mathEqual(solution, 7, { extract: true })).toBe(true);
    expect(mathEqual("The answer is \\boxed{12", 12, { extract: true })).toBe(false);
    expect(mathEqual("Thinking... #### 1,000", "1000", { extract: true })).toBe(true);
    expect(mathEqual("So the share is 50%.", "0.5", { extract: true })).toBe(true);
  });
});
