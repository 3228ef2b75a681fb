import { describe, expect, it } from "vitest";
import type { RolloutToken } from "@contracts";
import { HEAT_FLOOR_LOGPROB, TRAINED_COLOURS, heat, heatColour, isFlagged, pearson, ratioColour, shown, summarise, textParts, tokenStyle } from "./token-scales";

const tok = (over: Partial<RolloutToken>): RolloutToken => ({
  id: 1, text: "x", sampled: false, trained: false, sampling_logprob: null, trainer_logprob: null, ratio: null, role: null, ...over,
});
const trainedTok = (sampling: number, trainer: number): RolloutToken =>
  tok({ sampled: true, trained: true, sampling_logprob: sampling, trainer_logprob: trainer, ratio: Math.exp(trainer - sampling) });
const alpha = (c: string | undefined) => Number(/([\d.]+)\)$/.exec(c ?? "")?.[1] ?? 0);
const hue = (c: string | undefined) => Number(/hsla\((\d+)/.exec(c ?? "")?.[1] ?? -1);

describe("token colour scales", () => {
  it("trained-on: three classes, prompt uncoloured", () => {
    expect(tokenStyle(trainedTok(-1, -1), "trained", 0.2).background).toBe(TRAINED_COLOURS.trained);
    expect(tokenStyle(tok({ sampled: true, sampling_logprob: -1 }), "trained", 0.2)).toMatchObject({ background: TRAINED_COLOURS.sampled, label: "sampled, not trained" });
    expect(tokenStyle(tok({}), "trained", 0.2).background).toBeUndefined();
  });

  it("heat: monotone from a likely token (faint yellow) to an unlikely one (strong red), saturating at the floor", () => {
    expect(heat(0)).toBe(0);
    expect(heat(HEAT_FLOOR_LOGPROB)).toBe(1);
    expect(heat(-100)).toBe(1);
    expect(heat(Number.NEGATIVE_INFINITY)).toBe(1);
    const lps = [0, -0.1, -1, -3, -6];
    const alphas = lps.map((lp) => alpha(heatColour(lp)));
    const hues = lps.map((lp) => hue(heatColour(lp)));
    for (let i = 1; i < lps.length; i++) {
      expect(alphas[i]!).toBeGreaterThan(alphas[i - 1]!);
      expect(hues[i]!).toBeLessThanOrEqual(hues[i - 1]!);
    }
    expect(hues.at(-1)).toBe(0); // red
    // The logprob modes colour only the tokens that have that logprob.
    expect(tokenStyle(tok({}), "sampling", 0.2).background).toBeUndefined();
    expect(tokenStyle(tok({ sampled: true, sampling_logprob: -2 }), "trainer", 0.2).background).toBeUndefined();
  });

  it("ratio: diverging around 1 (none at 1, blue below, red above), symmetric in log space, outlined past the threshold", () => {
    expect(ratioColour(1, 0.2)).toBeUndefined();
    expect(hue(ratioColour(0.9, 0.2))).toBe(215);
    expect(hue(ratioColour(1.1, 0.2))).toBe(0);
    expect(alpha(ratioColour(1.1, 0.2))).toBeCloseTo(alpha(ratioColour(1 / 1.1, 0.2)), 6);
    expect(alpha(ratioColour(1.3, 0.2))).toBeGreaterThan(alpha(ratioColour(1.1, 0.2)));
    expect(alpha(ratioColour(Math.exp(0.4), 0.2))).toBe(alpha(ratioColour(Math.exp(5), 0.2))); // saturated at 2× threshold
    expect(isFlagged(Math.exp(0.19), 0.2)).toBe(false);
    expect(isFlagged(Math.exp(0.21), 0.2)).toBe(true);
    expect(isFlagged(Math.exp(-0.21), 0.2)).toBe(true);
    expect(isFlagged(Number.POSITIVE_INFINITY, 0.2)).toBe(true);
    expect(isFlagged(null, 0.2)).toBe(false);
    expect(tokenStyle(trainedTok(-1, -0.5), "ratio", 0.2).flagged).toBe(true);
    expect(tokenStyle(trainedTok(-1, -0.5), "trained", 0.2).flagged).toBe(false);
  });
});

describe("token summary", () => {
  it("counts trained tokens and summarises |log ratio|, the ratio range and the correlation over them only", () => {
    const tokens = [tok({}), tok({ sampled: true, sampling_logprob: -5 }), trainedTok(-1, -1.1), trainedTok(-0.5, -0.4), trainedTok(-2, -2)];
    const s = summarise(tokens, 0.05);
    expect(s).toMatchObject({ tokens: 5, sampled: 4, trained: 3, flagged: 2 });
    expect(s.meanAbsLogRatio).toBeCloseTo((0.1 + 0.1 + 0) / 3, 9);
    expect(s.maxRatio).toBeCloseTo(Math.exp(0.1), 9);
    expect(s.minRatio).toBeCloseTo(Math.exp(-0.1), 9);
    expect(s.correlation!).toBeGreaterThan(0.95);
    expect(summarise([tok({})], 0.2)).toMatchObject({ trained: 0, meanAbsLogRatio: null, maxRatio: null, correlation: null });
  });

  it("pearson matches the engine's convention for constants", () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBeCloseTo(1, 12);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1, 12);
    expect(pearson([0.5, 0.5], [0.5, 0.5])).toBe(1);
    expect(pearson([0.5, 0.5], [0.2, 0.9])).toBe(0);
    expect(pearson([], [])).toBeNull();
  });
});

describe("visible whitespace", () => {
  it("marks each space, tab, CR and newline and keeps every other character as it is", () => {
    expect(textParts(" the")).toEqual([{ kind: "space", text: " " }, { kind: "text", text: "the" }]);
    expect(textParts("a\n\n\tb\r")).toEqual([
      { kind: "text", text: "a" },
      { kind: "newline", text: "\n" },
      { kind: "newline", text: "\n" },
      { kind: "tab", text: "\t" },
      { kind: "text", text: "b" },
      { kind: "cr", text: "\r" },
    ]);
    expect(textParts("<b>x</b>")).toEqual([{ kind: "text", text: "<b>x</b>" }]);
    // Whatever the text, the parts put back together are exactly it.
    const s = "  <|im_end|>\n\t😀 \r\n";
    expect(textParts(s).map((p) => p.text).join("")).toBe(s);
  });
});

describe("token roles", () => {
  it("scaffolding counted when the log has roles (null when not); content only hides scaffolding, never prompt", () => {
    const prompt = tok({});
    const content = tok({ sampled: true, role: "content" });
    const scaffolding = tok({ sampled: true, role: "scaffolding" });
    expect(summarise([prompt, content, scaffolding, scaffolding], 0.2).scaffolding).toBe(2);
    expect(summarise([prompt, tok({ sampled: true })], 0.2).scaffolding).toBeNull();
    expect([prompt, content, scaffolding].filter((t) => shown(t, true))).toEqual([prompt, content]);
    expect([prompt, content, scaffolding].filter((t) => shown(t, false))).toHaveLength(3);
  });
});
