/** Absent is not zero: unknown counts and times read "—" (an ART client's rollouts), known ones as numbers. */
import { describe, expect, it } from "vitest";
import { fmtTimings, fmtTokens, fmtTurn } from "./rollout-figures";

describe("rollout figures", () => {
  it("a prompt count Rollbook does not know is —, not 0", () => {
    expect(fmtTokens({ prompt: null, completion: 40 })).toBe("— + 40");
    expect(fmtTokens({ prompt: 0, completion: 0 })).toBe("0 + 0");
    expect(fmtTokens({ prompt: 1234, completion: 40 }, "+")).toBe("1,234+40");
  });

  it("unmeasured times are —, measured ones (0 included) are times", () => {
    expect(fmtTimings({ started_at: 0, duration_ms: null, model_ms: null })).toEqual({ duration: "—", model: "—" });
    expect(fmtTimings({ started_at: 0, duration_ms: 1500, model_ms: 0 })).toEqual({ duration: "1.5 s", model: "0 ms" });
  });

  it("a turn's figures", () => {
    expect(fmtTurn({ message_index: 1, prompt_tokens: null, completion_tokens: 3, model_ms: null, finish_reason: "stop" })).toBe("— + 3 tok · —");
    expect(fmtTurn({ message_index: 1, prompt_tokens: 5, completion_tokens: 2, model_ms: 7, finish_reason: "length" })).toBe("5 + 2 tok · 7 ms · length");
  });
});
