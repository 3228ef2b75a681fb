/**
 * The TS half of the contract check: every fixture in fixtures/ must parse with the zod schema it is
 * named for. gpu-runner/engine/tests/test_*_contract.py parses the same files with the pydantic mirrors,
 * so a field renamed or retyped on one side only fails one of the two.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ChatCompletionRequest, ChatCompletionResponse, TrainRequest } from "./index";

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));

describe("shared contract fixtures", () => {
  it("train_request.json is a TrainRequest with every trainer field written out", () => {
    const raw = fixture("train_request.json") as { config: Record<string, unknown> };
    const parsed = TrainRequest.parse(raw);
    expect(Object.keys(raw.config).sort()).toEqual(Object.keys(parsed.config).sort());
  });

  it("chat_request.json and chat_response.json are chat completion request and response", () => {
    expect(ChatCompletionRequest.parse(fixture("chat_request.json")).return_token_ids).toBe(true);
    const res = ChatCompletionResponse.parse(fixture("chat_response.json"));
    expect(res.choices[0]!.token_ids).toHaveLength(res.choices[0]!.logprobs!.content.length);
  });

  it("rejects what the other side rejects: a string where a number belongs", () => {
    const bad = { ...(fixture("chat_request.json") as object), max_tokens: "24" };
    expect(ChatCompletionRequest.safeParse(bad).success).toBe(false);
  });
});
