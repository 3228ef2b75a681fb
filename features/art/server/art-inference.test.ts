import { describe, expect, it } from "vitest";
import type { ChatCompletionRequest } from "@contracts";
import { parseArtModelName, withTokenIds } from "./art-inference";

describe("parseArtModelName", () => {
  it("reads ART's ServerlessBackend names: newest checkpoint, and :step<N>", () => {
    expect(parseArtModelName("wandb-artifact:///acme/my-project/agent-001")).toEqual({ entity: "acme", project: "my-project", name: "agent-001", step: null });
    expect(parseArtModelName("wandb-artifact:///acme/my-project/agent-001:step7")).toEqual({ entity: "acme", project: "my-project", name: "agent-001", step: 7 });
    expect(parseArtModelName("wandb-artifact:///acme/p/agent:v2")).toEqual({ entity: "acme", project: "p", name: "agent:v2", step: null });
  });

  it("is null for every other model name (base models, <run>@<step>) and for malformed ones", () => {
    for (const m of ["SmolLM2-135M-Instruct", "12@3", "Qwen/Qwen2.5-0.5B-Instruct", "wandb-artifact:///acme/p", "wandb-artifact:///acme//n", "wandb-artifact:///a/p/n/x", "wandb-artifact://acme/p/n"]) {
      expect(parseArtModelName(m), m).toBeNull();
    }
  });
});

describe("withTokenIds", () => {
  const base: ChatCompletionRequest = { model: "m", messages: [{ role: "user", content: "hi" }] };

  it("asks for token_id:<id> tokens when logprobs are asked for", () => {
    expect(withTokenIds({ ...base, logprobs: true })).toEqual({ ...base, logprobs: true, return_tokens_as_token_ids: true });
  });

  it("leaves the caller's choice, and a body without logprobs, as they are", () => {
    const off = { ...base, logprobs: true, return_tokens_as_token_ids: false };
    expect(withTokenIds(off)).toBe(off);
    expect(withTokenIds(base)).toBe(base);
    const noLogprobs = { ...base, logprobs: false };
    expect(withTokenIds(noLogprobs)).toBe(noLogprobs);
  });
});
