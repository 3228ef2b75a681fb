/**
 * The TS half of the contract check: every fixture in fixtures/ must parse with the zod schema it is
 * named for. gpu-runner/engine/tests/test_*_contract.py parses the same files with the pydantic mirrors,
 * so a field renamed or retyped on one side only fails one of the two.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  ChatCompletionChunk,
  ChatCompletionRequest,
  ChatCompletionResponse,
  DetokenizeRequest,
  DetokenizeResponse,
  TokenizeRequest,
  TokenizeResponse,
  TokenSequence,
  TrainRequest,
  TrainStreamLine,
  ValidChatCompletionRequest,
} from "./index";

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8"));

describe("shared contract fixtures", () => {
  it("train_request.json is a TrainRequest with every trainer field written out", () => {
    const raw = fixture("train_request.json") as { config: Record<string, unknown> };
    const parsed = TrainRequest.parse(raw);
    expect(Object.keys(raw.config).sort()).toEqual(Object.keys(parsed.config).sort());
    // A re-tokenised reply sampled elsewhere: no sampling logprobs, the trainer computes them.
    expect(parsed.groups[1]!.samples[1]!.sequences[0]!.recomputed_logprobs).toBe(true);
    expect(parsed.groups[0]!.samples[0]!.sequences[0]!.recomputed_logprobs).toBeUndefined();
  });

  it("a recomputed_logprobs sequence must send logprobs of 0, and the error names the index", () => {
    const seq = { tokens: [1, 30, 2, 46], mask: [0, 0, 0, 1], logprobs: [0, 0, 0, -1.3], recomputed_logprobs: true };
    const r = TokenSequence.safeParse(seq);
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path)).toEqual([["logprobs", 3]]);
    expect(TokenSequence.safeParse({ ...seq, recomputed_logprobs: false }).success).toBe(true);
  });

  it("train_result.json is a result line with the trainer's logprobs per trained trajectory", () => {
    const line = TrainStreamLine.parse(fixture("train_result.json"));
    if (line.type !== "result") throw new Error("expected a result line");
    expect(line.token_logprobs["s1-0-1"]).toEqual({ advantage: -0.99, sequences: [[-2.5], []] });
    const { token_logprobs: _, ...older } = fixture("train_result.json") as Record<string, unknown>;
    expect(TrainStreamLine.parse(older)).toMatchObject({ token_logprobs: {} });
  });

  it("detokenize.json is a /detokenize request and response", () => {
    const f = fixture("detokenize.json") as { request: unknown; response: unknown };
    expect(DetokenizeRequest.parse(f.request).token_ids).toEqual([1, 2, 28, 198]);
    expect(DetokenizeResponse.parse(f.response).pieces.at(-1)).toBe("\n");
  });

  it("tokenize.json is a /tokenize request (a chat request, add_generation_prompt defaulting to true) and response", () => {
    const f = fixture("tokenize.json") as { request: Record<string, unknown>; response: unknown };
    expect(TokenizeRequest.parse(f.request).add_generation_prompt).toBe(false);
    const { add_generation_prompt: _, ...plain } = f.request;
    expect(TokenizeRequest.parse(plain).add_generation_prompt).toBe(true);
    expect(TokenizeResponse.parse(f.response).count).toBe(4);
  });

  it("chat_request.json and chat_response.json are chat completion request and response", () => {
    const req = ValidChatCompletionRequest.parse(fixture("chat_request.json"));
    expect(req.return_token_ids).toBe(true);
    expect(req.continue_from?.message_count).toBe(3);
    expect([req.tool_choice, req.top_logprobs, req.stream_options?.include_usage]).toEqual(["auto", 2, true]);
    const res = ChatCompletionResponse.parse(fixture("chat_response.json"));
    expect(res.choices[0]!.token_ids).toHaveLength(res.choices[0]!.logprobs!.content.length);
    expect(res.choices[0]!.logprobs!.content[0]!.top_logprobs![1]!.token).toBe("Apple");
    expect(res.choices[1]!.malformed_tool_calls![0]!.error).toMatch(/^invalid JSON/);
    expect(res.choices[2]!.message.content).toBeNull();
  });

  it("chat_chunks.json is a stream: role first, tool calls whole, usage last with no choices", () => {
    const chunks = (fixture("chat_chunks.json") as unknown[]).map((c) => ChatCompletionChunk.parse(c));
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks[2]!.choices[0]!.delta.tool_calls![0]!.function!.name).toBe("add");
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage?.total_tokens).toBe(32);
  });

  it("rejects what the other side rejects: a string where a number belongs", () => {
    const bad = { ...(fixture("chat_request.json") as object), max_tokens: "24" };
    expect(ChatCompletionRequest.safeParse(bad).success).toBe(false);
  });

  it("reports a rule between fields on the field at fault, as the engine's 400 names it", () => {
    const base = { model: "m", messages: [{ role: "user", content: "hi" }] };
    const paths = (body: object) =>
      ValidChatCompletionRequest.safeParse({ ...base, ...body }).error?.issues.map((i) => i.path.join("."));
    expect(paths({ top_logprobs: 2 })).toEqual(["top_logprobs"]);
    expect(paths({ tool_choice: "required" })).toEqual(["tool_choice"]);
    expect(paths({ continue_from: { token_ids: [1], message_count: 1 } })).toEqual(["continue_from.message_count"]);
    const withReply = { messages: [...base.messages, { role: "user", content: "again" }] };
    expect(paths({ ...withReply, continue_from: { token_ids: [1], message_count: 1 } })).toEqual([
      "continue_from.message_count",
    ]);
    expect(paths({ top_logprobs: 2, logprobs: true })).toBeUndefined();
  });
});
