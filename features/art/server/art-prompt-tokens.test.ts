/** A training job's rollouts get their prompt counts from the runner's "prepared" line, or stay unknown. */
import { describe, expect, it } from "vitest";
import type { Trajectory } from "@contracts";
import { withPromptTokens } from "./art-prompt-tokens";

const rollout = (id: string, turns: number): Trajectory => ({
  id,
  step: 1,
  group: 0,
  task_index: 0,
  split: "train",
  task: null,
  messages: [],
  reward: 1,
  metrics: {},
  error: null,
  model: "m",
  tokens: { prompt: null, completion: 10 * turns },
  timings: { started_at: 0, duration_ms: null, model_ms: null },
  logs: [],
  turns: Array.from({ length: turns }, (_, i) => ({ message_index: 2 * i + 1, prompt_tokens: null, completion_tokens: 10, model_ms: null })),
});

describe("withPromptTokens", () => {
  it("fills each turn's prompt count and the rollout's total from the runner's counts", () => {
    const [t] = withPromptTokens([rollout("a", 2)], { a: [200, 230] });
    expect(t!.tokens).toEqual({ prompt: 430, completion: 20 });
    expect(t!.turns!.map((x) => x.prompt_tokens)).toEqual([200, 230]);
    expect(t!.timings.model_ms).toBeNull();
  });

  it("leaves out rollouts it cannot count exactly: none sent, a count per turn missing, no turns", () => {
    const out = withPromptTokens([rollout("a", 2), rollout("b", 1), rollout("c", 0), rollout("toString", 1)], { a: [200], c: [] });
    expect(out).toEqual([]);
  });
});
