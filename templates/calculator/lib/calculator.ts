import { tool } from "rollbook";
import { z } from "zod";

// A tiny arithmetic evaluator (+ - * / and parentheses) written out, because the sandbox has no eval we
// would want a model's text to reach.
export function evaluate(expression: string): number {
  let i = 0;
  const s = expression.replace(/\s+/g, "");
  const peek = () => s[i];
  const number = (): number => {
    const m = /^\d+(\.\d+)?/.exec(s.slice(i));
    if (!m) throw new Error(`expected a number at position ${i + 1} of "${expression}"`);
    i += m[0].length;
    return Number(m[0]);
  };
  const factor = (): number => {
    if (peek() === "-") {
      i++;
      return -factor();
    }
    if (peek() === "(") {
      i++;
      const v = sum();
      if (peek() !== ")") throw new Error(`missing ")" in "${expression}"`);
      i++;
      return v;
    }
    return number();
  };
  const product = (): number => {
    let v = factor();
    while (peek() === "*" || peek() === "/") v = s[i++] === "*" ? v * factor() : v / factor();
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === "+" || peek() === "-") v = s[i++] === "+" ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (i !== s.length) throw new Error(`unexpected "${s[i]}" at position ${i + 1} of "${expression}"`);
  return value;
}

export const calculator = tool({
  name: "calculate",
  description: 'Evaluate an arithmetic expression with + - * / and parentheses. Arguments: {"expression": "37 * 48"}',
  parameters: z.object({ expression: z.string().describe("the expression, e.g. 37 * 48") }),
  execute: ({ expression }) => String(evaluate(expression)),
});
