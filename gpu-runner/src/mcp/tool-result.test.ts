import { describe, expect, it } from "vitest";
import { toToolResult, toToolSpec } from "./tool-result";

describe("toToolSpec", () => {
  it("makes an OpenAI function spec from the tool's inputSchema, without $schema", () => {
    const spec = toToolSpec({
      name: "get-sum",
      title: "Get Sum",
      description: "Returns the sum",
      inputSchema: { type: "object", properties: { a: { type: "number" } }, required: ["a"], $schema: "http://json-schema.org/draft-07/schema#" },
    });
    expect(spec).toEqual({
      type: "function",
      function: { name: "get-sum", description: "Returns the sum", parameters: { type: "object", properties: { a: { type: "number" } }, required: ["a"] } },
    });
    expect(toToolSpec({ name: "t", title: "Only a title", inputSchema: { type: "object" } }).function.description).toBe("Only a title");
  });
});

describe("toToolResult", () => {
  it("joins text, summarises binary content, keeps embedded text resources readable", () => {
    const r = toToolResult(
      {
        content: [
          { type: "text", text: "first" },
          { type: "image", data: "A".repeat(4096), mimeType: "image/png" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          { type: "resource_link", uri: "file:///a.txt", name: "a.txt" },
          { type: "resource", resource: { uri: "demo://1", mimeType: "text/plain", text: "inside" } },
          { type: "resource", resource: { uri: "demo://2", mimeType: "application/zip", blob: "AAAA" } },
        ],
      },
      1_000,
    );
    expect(r).toEqual({
      isError: false,
      text: ["first", "[image: image/png, 3.0 KB]", "[audio: audio/wav, 3 B]", "[resource link: a.txt <file:///a.txt>]", "[resource <demo://1>]\ninside", "[resource <demo://2>: application/zip, 3 B]"].join("\n"),
    });
  });

  it("caps the text with a note saying how much there was", () => {
    const r = toToolResult({ content: [{ type: "text", text: "x".repeat(500) }], isError: true }, 100);
    expect(r.isError).toBe(true);
    expect(r.text).toBe(`${"x".repeat(100)}\n[… truncated: the result had 500 characters; mcp.max_result_chars is 100]`);
  });

  it("keeps structured content, uses it as text when there is none, and drops it when over the cap", () => {
    expect(toToolResult({ content: [], structuredContent: { n: 1 } }, 100)).toEqual({ text: '{"n":1}', isError: false, structured: { n: 1 } });
    const big = toToolResult({ content: [{ type: "text", text: "ok" }], structuredContent: { s: "y".repeat(200) } }, 100);
    expect(big.structured).toBeUndefined();
    expect(big.text).toBe("ok\n[structured content of 208 characters left out: over mcp.max_result_chars (100)]");
  });
});
