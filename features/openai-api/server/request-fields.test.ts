import { describe, expect, it } from "vitest";
import { unsupportedField } from "./request-fields";
import { apiTenant, tokenBudget } from "./api-limits";

describe("unsupportedField", () => {
  it("passes the request's own fields and OpenAI's fields without effect", () => {
    expect(unsupportedField({ model: "m", messages: [], response_format: { type: "json_object" }, store: true, metadata: {}, service_tier: "auto" })).toBeNull();
  });
  it("names a field it does not know, as OpenAI does", () => {
    expect(unsupportedField({ model: "m", top_k: 4 })).toEqual({ param: "top_k", message: "Unrecognized request argument supplied: top_k" });
    expect(unsupportedField({ model: "m", __rollbook: 1 })?.param).toBe("__rollbook");
  });
  it("accepts neutral values of OpenAI fields the engine lacks, and refuses the rest by name", () => {
    expect(unsupportedField({ frequency_penalty: 0, presence_penalty: null, logit_bias: {}, modalities: ["text"] })).toBeNull();
    expect(unsupportedField({ frequency_penalty: 0.1 })?.param).toBe("frequency_penalty");
    expect(unsupportedField({ logit_bias: { "42": 100 } })?.param).toBe("logit_bias");
    expect(unsupportedField({ modalities: ["text", "audio"] })?.param).toBe("modalities");
    expect(unsupportedField({ functions: [{ name: "f" }] })?.message).toContain("not supported");
  });
  it("leaves a body that is not an object to the schema", () => {
    expect(unsupportedField([1])).toBeNull();
    expect(unsupportedField("x")).toBeNull();
  });
});

describe("tokenBudget", () => {
  const e = { API_MAX_TOKENS_DEFAULT: 1024, API_MAX_TOKENS_CEILING: 4096 };
  it("is the default when the caller sets none, never above the ceiling", () => {
    expect(tokenBudget({}, e)).toEqual({ ok: true, maxTokens: 1024 });
    expect(tokenBudget({}, { API_MAX_TOKENS_DEFAULT: 9000, API_MAX_TOKENS_CEILING: 512 })).toEqual({ ok: true, maxTokens: 512 });
  });
  it("takes the smaller of max_tokens and max_completion_tokens", () => {
    expect(tokenBudget({ max_tokens: 300, max_completion_tokens: 200 }, e)).toEqual({ ok: true, maxTokens: 200 });
  });
  it("refuses more than the ceiling, naming the field and the setting", () => {
    const over = tokenBudget({ max_completion_tokens: 5000 }, e);
    expect(over).toMatchObject({ ok: false, param: "max_completion_tokens" });
    expect(!over.ok && over.message).toContain("API_MAX_TOKENS_CEILING");
  });
});

describe("apiTenant", () => {
  it("puts a workspace's API calls in one fair share, whatever user they send", () => {
    expect(apiTenant("ws1", undefined)).toBe("api:ws1/");
    expect(apiTenant("ws1", "alice")).toBe("api:ws1/alice");
    // A run id as `user` does not join that run's share: the run part is the workspace's.
    expect(apiTenant("ws1", "cmrun123/cmrun123:s1:g0:r0").split("/")[0]).toBe("api:ws1");
  });
  it("fits the engine's 256-character user", () => {
    expect(apiTenant("ws1", "u".repeat(300))).toHaveLength(256);
  });
});
