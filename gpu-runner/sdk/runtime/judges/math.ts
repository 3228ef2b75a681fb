/**
 * mathEqual: are two answers the same number? Exact rational comparison (BigInt), so 0.1 + 0.2-style
 * float error and 30-digit integers cannot make a right answer wrong or a wrong one right.
 */
import { extractAnswer } from "./extract-answer";
import { type MathValue, cleanAnswer, parseMathValue } from "./math-value";
import { type Rational, abs, compare, equals, mul, sub } from "./rational";

export interface MathEqualOptions {
  /**
   * Accept |answer − expected| ≤ relTol × max(|answer|, |expected|), e.g. 1e-6 or 0.01 (1%). Default 0:
   * exact. Computed exactly, so relTol 0.01 accepts 0.99 against 1 and rejects 0.9899.
   */
  relTol?: number;
  /** Run extractAnswer on `answer` first, so a whole worked solution can be passed. Default false. */
  extract?: boolean;
  /**
   * How a `%` counts. "flexible" (default): "50%" equals both 0.5 and 50 (datasets disagree on which
   * they store). "strict": "50%" is 0.5 only.
   */
  percent?: "flexible" | "strict";
}

type Answer = string | number | bigint | null | undefined;

/**
 * True when `answer` and `expected` are the same number, compared exactly (BigInt fractions, never
 * floats): "0.5" = "1/2" = "\frac{1}{2}" = 0.5, "1,234" = 1234, "$12.00" = "12 dollars" = 12. Both sides
 * are read by parseMathValue; a JS number `expected` is read from its shortest decimal form, so 0.1 is
 * exactly 1/10. When neither side is a number (`x^2+1`, `(1, 2)`, `\pi`), their cleaned LaTeX is compared
 * as text; a number never equals a non-number, and null, "" or a non-finite number never equals anything.
 *
 * @param answer The model's answer (already extracted, or pass `{ extract: true }`).
 * @param expected The right answer: a string, a number or a bigint.
 * @example mathEqual(extractAnswer(output), task.answer)
 * @example mathEqual(output, task.answer, { extract: true, relTol: 1e-4 })
 */
export function mathEqual(answer: Answer, expected: string | number | bigint, opts: MathEqualOptions = {}): boolean {
  const tol = opts.relTol === undefined ? undefined : toleranceOf(opts.relTol);
  let a: Answer = answer;
  if (opts.extract && typeof a === "string") a = extractAnswer(a);
  if (a === null || a === undefined) return false;
  const va = valueOf(a);
  const vb = valueOf(expected);
  if (va && vb) {
    // Both written with %: the values must agree ("50%" is not "5000%" though both read as 50).
    const flexible = opts.percent !== "strict" && va.percent !== vb.percent;
    return readings(va, flexible).some((x) => readings(vb, flexible).some((y) => close(x, y, tol)));
  }
  if (va || vb || typeof a !== "string" || typeof expected !== "string") return false;
  const ca = canonical(a);
  return ca !== "" && ca === canonical(expected);
}

function toleranceOf(relTol: number): Rational {
  if (!Number.isFinite(relTol) || relTol < 0) throw new RangeError(`mathEqual: relTol must be a finite number >= 0, got ${relTol}`);
  const t = parseMathValue(String(relTol));
  if (!t) throw new RangeError(`mathEqual: relTol ${relTol} is not representable`);
  return t;
}

function valueOf(x: string | number | bigint): MathValue | null {
  if (typeof x === "bigint") return { num: x, den: 1n, percent: false };
  if (typeof x === "number") return Number.isFinite(x) ? parseMathValue(String(x)) : null;
  return parseMathValue(x);
}

/** A value, and for a percentage also the bare number that was written before the % sign. */
function readings(v: MathValue, flexible: boolean): Rational[] {
  return v.percent && flexible ? [v, mul(v, { num: 100n, den: 1n })] : [v];
}

function close(a: Rational, b: Rational, tol: Rational | undefined): boolean {
  if (equals(a, b)) return true;
  if (!tol) return false;
  const biggest = compare(abs(a), abs(b)) >= 0 ? abs(a) : abs(b);
  return compare(abs(sub(a, b)), mul(tol, biggest)) <= 0;
}

/** Non-numeric answers compare as cleaned LaTeX without spaces: `\dfrac{\sqrt3}{2}` = `\frac{\sqrt3}{2}`. */
function canonical(s: string): string {
  return cleanAnswer(s).replaceAll(" ", "");
}
