import { describe, expect, it } from "vitest";
import { rolloutText, wordDiff } from "./text-diff";

describe("wordDiff", () => {
  it("marks words removed from the first text and added in the second, and rebuilds both", () => {
    const d = wordDiff("the answer is 4", "the answer is five");
    if (!d.ok) throw new Error(d.reason);
    expect(d.parts.filter((p) => p.kind === "removed").map((p) => p.text)).toEqual(["4"]);
    expect(d.parts.filter((p) => p.kind === "added").map((p) => p.text)).toEqual(["five"]);
    expect(d.added).toBe(1);
    expect(d.removed).toBe(1);
    expect(d.parts.filter((p) => p.kind !== "added").map((p) => p.text).join("")).toBe("the answer is 4");
    expect(d.parts.filter((p) => p.kind !== "removed").map((p) => p.text).join("")).toBe("the answer is five");
  });

  it("finds no change between equal texts", () => {
    const d = wordDiff("same words\nhere", "same words\nhere");
    expect(d.ok && d.parts.every((p) => p.kind === "same")).toBe(true);
  });

  it("gives up with a reason instead of hanging on huge, unrelated texts", () => {
    const a = Array.from({ length: 40_000 }, (_, i) => `a${i}`).join(" ");
    const b = Array.from({ length: 40_000 }, (_, i) => `b${i}`).join(" ");
    const d = wordDiff(a, b, 20);
    expect(d.ok).toBe(false);
  });
});

describe("rolloutText", () => {
  it("is the assistant turns' text and tool calls only", () => {
    expect(
      rolloutText({
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: "", tool_calls: [{ id: "1", type: "function", function: { name: "f", arguments: '{"x":1}' } }] },
          { role: "tool", content: "2" },
          { role: "assistant", content: "done" },
        ],
      }),
    ).toBe('→ f({"x":1})\n\ndone');
  });
});
