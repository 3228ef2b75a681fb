/**
 * MCP tools and results in the shapes the rest of the runner speaks: a tool becomes an OpenAI-format
 * function spec for the model; a result becomes the text the model will read (text parts joined, images
 * and other binary parts summarised, never pasted as base64), capped so one verbose tool cannot flood
 * the context window or the stored trajectory.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolSpec } from "../../../contracts";

export interface McpToolResult {
  /** Text for the model: text content joined by newlines, other content summarised in [brackets]. */
  text: string;
  /** The tool reported a failure (MCP `isError`): the model should see it, the call itself succeeded. */
  isError: boolean;
  /** The tool's structuredContent, when it returned some (and it fits the size cap). */
  structured?: Record<string, unknown>;
}

export function toToolSpec(tool: Tool): ToolSpec {
  // `$schema` tells a validator the draft; to a model it is only tokens.
  const { $schema: _drop, ...parameters } = tool.inputSchema as Record<string, unknown>;
  const description = tool.description ?? tool.title;
  return {
    type: "function",
    function: { name: tool.name, ...(description ? { description } : {}), parameters },
  };
}

function size(base64: string): string {
  const bytes = Math.floor((base64.length * 3) / 4);
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KB`;
}

function part(content: CallToolResult["content"][number]): string {
  switch (content.type) {
    case "text":
      return content.text;
    case "image":
      return `[image: ${content.mimeType}, ${size(content.data)}]`;
    case "audio":
      return `[audio: ${content.mimeType}, ${size(content.data)}]`;
    case "resource_link":
      return `[resource link: ${content.name} <${content.uri}>${content.description ? ` — ${content.description}` : ""}]`;
    case "resource": {
      const r = content.resource;
      // An embedded text resource is content the model can read; a blob is not.
      if ("text" in r && typeof r.text === "string") return `[resource <${r.uri}>]\n${r.text}`;
      const blob = "blob" in r && typeof r.blob === "string" ? `, ${size(r.blob)}` : "";
      return `[resource <${r.uri}>: ${r.mimeType ?? "binary"}${blob}]`;
    }
    default:
      return `[${String((content as { type?: unknown }).type)} content]`;
  }
}

export function toToolResult(result: CallToolResult, maxChars: number): McpToolResult {
  const structured = result.structuredContent;
  let text = (result.content ?? []).map(part).join("\n");
  const notes: string[] = [];
  let keepStructured = structured !== undefined;
  if (structured !== undefined) {
    const json = JSON.stringify(structured);
    // MCP asks servers to mirror structured content as text; when one does not, the model still needs it.
    if (!text) text = json;
    if (json.length > maxChars) {
      keepStructured = false;
      notes.push(`[structured content of ${json.length} characters left out: over mcp.max_result_chars (${maxChars})]`);
    }
  }
  if (text.length > maxChars) {
    notes.unshift(`[… truncated: the result had ${text.length} characters; mcp.max_result_chars is ${maxChars}]`);
    text = text.slice(0, maxChars);
  }
  if (notes.length) text = `${text}\n${notes.join("\n")}`;
  return {
    text,
    isError: result.isError === true,
    ...(keepStructured && structured !== undefined ? { structured } : {}),
  };
}
