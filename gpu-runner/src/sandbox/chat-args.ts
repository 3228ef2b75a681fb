/**
 * Validation of what user code sends over the bridge. A request arrives as the JSON string the glue made
 * (bootstrap.ts); its size is checked before it is parsed — the same rule, on the same string, as the glue
 * applies before sending it — so a multi-megabyte prompt or tool argument costs the runner nothing. Its
 * shape is the user's, so it is checked against the contracts: a typo ("rol": "user") fails inside the
 * rollout with a clear message instead of reaching the engine as a malformed request.
 *
 * The size of a model request is its whole JSON (messages with names and ids, tools, stop strings): a
 * count of content characters alone would let a million empty messages or a megabyte `name` through.
 */
import { z } from "zod";
import { ChatCompletionRequest, ChatMessage, type LimitsConfig } from "../../../contracts";
import { MAX_MCP_NAME_CHARS } from "./bootstrap";

/** ctx.chat's options (the SDK's ChatOptions, tools already turned into specs by the SDK runtime). */
export const ChatOptions = ChatCompletionRequest.pick({
  temperature: true,
  top_p: true,
  max_tokens: true,
  stop: true,
  seed: true,
  tools: true,
  tool_choice: true,
}).strict();
export type ChatOptions = z.infer<typeof ChatOptions>;

const ChatMessages = z.array(ChatMessage).min(1, "needs at least one message");

export const JudgeOptions = z.object({ temperature: z.number().min(0).max(2).optional(), max_tokens: z.number().int().min(1).max(8192).optional() }).strict();
export type JudgeOptions = z.infer<typeof JudgeOptions>;

export function formatIssues(prefix: string, error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.map((k) => (typeof k === "number" ? `[${k}]` : `.${String(k)}`)).join("");
      return `${prefix}${path}: ${i.message}`;
    })
    .join("; ");
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; name: "TypeError" | "LimitError"; message: string };

const n = (x: number) => x.toLocaleString("en");
const typeError = (message: string): Parsed<never> => ({ ok: false, name: "TypeError", message });

/** The glue always sends a JSON array; anything else is refused without looking further. */
function parseArray(what: string, json: string, length: number): unknown[] | Parsed<never> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return typeError(`${what}: the request is not JSON`);
  }
  if (!Array.isArray(value) || value.length !== length) return typeError(`${what}: malformed request`);
  return value;
}

function parseModelRequest<O extends z.ZodType>(what: string, json: string, options: O, limits: LimitsConfig): Parsed<{ messages: ChatMessage[]; options: z.infer<O> }> {
  if (json.length > limits.max_prompt_chars) {
    return { ok: false, name: "LimitError", message: `${what}: the messages and options are ${n(json.length)} characters as JSON; limits.max_prompt_chars is ${n(limits.max_prompt_chars)}` };
  }
  const args = parseArray(what, json, 2);
  if (!Array.isArray(args)) return args;
  const m = ChatMessages.safeParse(args[0]);
  if (!m.success) return typeError(`${what}: invalid messages: ${formatIssues("messages", m.error)}`);
  const o = options.safeParse(args[1] ?? {});
  if (!o.success) return typeError(`${what}: invalid options: ${formatIssues("options", o.error)}`);
  return { ok: true, value: { messages: m.data, options: o.data } };
}

export function parseChatRequest(what: string, json: string, limits: LimitsConfig): Parsed<{ messages: ChatMessage[]; options: ChatOptions }> {
  return parseModelRequest(what, json, ChatOptions, limits);
}

export function parseJudgeRequest(json: string, limits: LimitsConfig): Parsed<{ messages: ChatMessage[]; options: JudgeOptions }> {
  return parseModelRequest("judgeChat", json, JudgeOptions, limits);
}

const McpCallArgs = z.tuple([z.string().min(1).max(MAX_MCP_NAME_CHARS), z.string().min(1).max(MAX_MCP_NAME_CHARS), z.record(z.string(), z.unknown())]);

export function parseMcpCallRequest(json: string, limits: LimitsConfig): Parsed<{ server: string; tool: string; args: Record<string, unknown> }> {
  // Two names of at most MAX_MCP_NAME_CHARS and the arguments: anything longer cannot be within the limit.
  if (json.length > limits.max_tool_args_chars + 2 * MAX_MCP_NAME_CHARS * 6 + 16) {
    return { ok: false, name: "LimitError", message: `ctx.mcp.call: the request is ${n(json.length)} characters of JSON; limits.max_tool_args_chars is ${n(limits.max_tool_args_chars)}` };
  }
  const raw = parseArray("ctx.mcp.call", json, 3);
  if (!Array.isArray(raw)) return raw;
  const p = McpCallArgs.safeParse(raw);
  if (!p.success) return typeError(`ctx.mcp.call(server, tool, args): ${formatIssues("", p.error)}`);
  const size = JSON.stringify(p.data[2]).length;
  if (size > limits.max_tool_args_chars) {
    return { ok: false, name: "LimitError", message: `ctx.mcp.call: the arguments are ${n(size)} characters of JSON; limits.max_tool_args_chars is ${n(limits.max_tool_args_chars)}` };
  }
  return { ok: true, value: { server: p.data[0], tool: p.data[1], args: p.data[2] } };
}
