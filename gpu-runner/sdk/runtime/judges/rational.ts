/**
 * Exact rational numbers on BigInt, so that 0.1 + 0.2 is 0.3 and 10^30 + 1 is not 10^30. Only what the
 * math judge needs: build from digits, add, multiply, compare. Values are kept reduced with a positive
 * denominator, so two equal values have equal fields.
 */

export interface Rational {
  /** Numerator; carries the sign. */
  readonly num: bigint;
  /** Denominator; always > 0. */
  readonly den: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** num/den reduced; null when den is 0. */
export function rational(num: bigint, den: bigint = 1n): Rational | null {
  if (den === 0n) return null;
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const g = gcd(num, den);
  return g > 1n ? { num: num / g, den: den / g } : { num, den };
}

/** A value known to have a non-zero denominator (internal shorthand). */
function r(num: bigint, den: bigint): Rational {
  return rational(num, den) as Rational;
}

export function add(a: Rational, b: Rational): Rational {
  return r(a.num * b.den + b.num * a.den, a.den * b.den);
}

export function sub(a: Rational, b: Rational): Rational {
  return r(a.num * b.den - b.num * a.den, a.den * b.den);
}

export function mul(a: Rational, b: Rational): Rational {
  return r(a.num * b.num, a.den * b.den);
}

/** a / b; null when b is 0. */
export function div(a: Rational, b: Rational): Rational | null {
  return rational(a.num * b.den, a.den * b.num);
}

export function neg(a: Rational): Rational {
  return { num: -a.num, den: a.den };
}

export function abs(a: Rational): Rational {
  return a.num < 0n ? neg(a) : a;
}

/** -1, 0 or 1 as a < b, a = b, a > b (cross-multiplied: exact, no division). */
export function compare(a: Rational, b: Rational): -1 | 0 | 1 {
  const l = a.num * b.den;
  const rr = b.num * a.den;
  return l < rr ? -1 : l > rr ? 1 : 0;
}

export function equals(a: Rational, b: Rational): boolean {
  return a.num === b.num && a.den === b.den;
}

/** 10^k for k >= 0. */
export function pow10(k: number): bigint {
  return 10n ** BigInt(k);
}
