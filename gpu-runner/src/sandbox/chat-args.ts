/**
 * Validation of what user code passes to the bridge. The isolate hands the host plain copied data, but its
 * shape is still the user's: check it against the contracts so a typo ("rol": "user") fails inside the
 * rollout with a clear message instead of reaching the engine as a malformed request, and cap its size so
 * a multi-megabyte prompt or a giant tool list is refused here, before it costs the engine anything.
 */
import { z } from "zod";
import { ChatCompletionRequest, ChatMessage, type LimitsConfig } from "../../contracts";

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

/** Characters of text a request carries (message contents, tool calls, tool specs): what the caps count. */
export function requestChars(messages: readonly ChatMessage[], tools?: unknown): number {
  let n = 0;
  for (const m of messages) {
    n += (m.content ?? "").length;
    for (const c of m.tool_calls ?? []) n += c.function.name.length + c.function.arguments.length;
  }
  return n + (tools === undefined ? 0 : JSON.stringify(tools).length);
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export function parseChatArgs(what: string, messages: unknown, options: unknown, limits: LimitsConfig): Parsed<{ messages: ChatMessage[]; options: ChatOptions }> {
  const m = ChatMessages.safeParse(messages);
  if (!m.success) return { ok: false, message: `${what}: invalid messages: ${formatIssues("messages", m.error)}` };
  const o = ChatOptions.safeParse(options ?? {});
  if (!o.success) return { ok: false, message: `${what}: invalid options: ${formatIssues("options", o.error)}` };
  const chars = requestChars(m.data, o.data.tools);
  if (chars > limits.max_prompt_chars) {
    return { ok: false, message: `${what}: the messages and tools are ${chars.toLocaleString("en")} characters; limits.max_prompt_chars is ${limits.max_prompt_chars.toLocaleString("en")}` };
  }
  return { ok: true, value: { messages: m.data, options: o.data } };
}

export function parseJudgeArgs(messages: unknown, options: unknown, limits: LimitsConfig): Parsed<{ messages: ChatMessage[]; options: JudgeOptions }> {
  const m = ChatMessages.safeParse(messages);
  if (!m.success) return { ok: false, message: `judgeChat: invalid messages: ${formatIssues("messages", m.error)}` };
  const o = JudgeOptions.safeParse(options ?? {});
  if (!o.success) return { ok: false, message: `judgeChat: invalid options: ${formatIssues("options", o.error)}` };
  const chars = requestChars(m.data);
  if (chars > limits.max_prompt_chars) {
    return { ok: false, message: `judgeChat: the messages are ${chars.toLocaleString("en")} characters; limits.max_prompt_chars is ${limits.max_prompt_chars.toLocaleString("en")}` };
  }
  return { ok: true, value: { messages: m.data, options: o.data } };
}

const McpCallArgs = z.tuple([z.string().min(1).max(200), z.string().min(1).max(200), z.record(z.string(), z.unknown())]);

export function parseMcpCallArgs(server: unknown, tool: unknown, args: unknown, limits: LimitsConfig): Parsed<{ server: string; tool: string; args: Record<string, unknown> }> {
  const p = McpCallArgs.safeParse([server, tool, args ?? {}]);
  if (!p.success) return { ok: false, message: `ctx.mcp.call(server, tool, args): ${formatIssues("", p.error)}` };
  const size = JSON.stringify(p.data[2]).length;
  if (size > limits.max_tool_args_chars) {
    return { ok: false, message: `ctx.mcp.call: the arguments are ${size.toLocaleString("en")} characters of JSON; limits.max_tool_args_chars is ${limits.max_tool_args_chars.toLocaleString("en")}` };
  }
  return { ok: true, value: { server: p.data[0], tool: p.data[1], args: p.data[2] } };
}
