/**
 * Chat messages and the engine's OpenAI-compatible chat completion API, with the token-level extensions
 * vLLM uses (`return_token_ids` → top-level `prompt_token_ids` and per-choice `token_ids`). The Python
 * side is gpu-runner/engine/rollbook_engine/contracts/chat.py; fixtures/chat_*.json are checked by both.
 */
import { z } from "zod";

export const ToolCall = z.object({
  id: z.string(),
  type: z.literal("function").default("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ChatMessage = z.object({
  role: z.enum(["system", "user", "assistant", "tool"]),
  content: z.string().nullable().default(""),
  name: z.string().optional(),
  tool_calls: z.array(ToolCall).optional(),
  tool_call_id: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolSpec = z.object({
  type: z.literal("function"),
  function: z.object({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

/** "auto": the model decides; "required": it must call a tool; a named function: it must call that one. */
export const ToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

export const ChatCompletionRequest = z.object({
  /** Base model id, or `<run>@<step>` for a run's LoRA checkpoint. */
  model: z.string(),
  messages: z.array(ChatMessage).min(1),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  max_tokens: z.number().int().min(1).optional(),
  n: z.number().int().min(1).max(256).optional(),
  seed: z.number().int().optional(),
  stop: z.union([z.string(), z.array(z.string())]).optional(),
  logprobs: z.boolean().optional(),
  tools: z.array(ToolSpec).optional(),
  tool_choice: ToolChoice.optional(),
  /**
   * Rollbook extension (token-exact multi-turn): the first `message_count` messages are exactly the
   * conversation whose tokens are `token_ids` (the previous call's prompt_token_ids + its sampled token_ids);
   * the engine renders only the later messages and appends them, so earlier turns keep the exact tokens
   * the model saw and sampled.
   */
  continue_from: z
    .object({ token_ids: z.array(z.number().int().min(0)).min(1), message_count: z.number().int().min(1) })
    .optional(),
  /** vLLM extension: return prompt and completion token ids. */
  return_token_ids: z.boolean().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export const TokenLogprob = z.object({ token: z.string(), logprob: z.number() });

export const ChatChoice = z.object({
  index: z.number().int(),
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z.array(ToolCall).optional(),
  }),
  finish_reason: z.enum(["stop", "length", "tool_calls"]).nullable(),
  /** Rollbook extension: `<tool_call>` blocks that could not be parsed (they stay in the content too). */
  malformed_tool_calls: z.array(z.object({ text: z.string(), error: z.string() })).optional(),
  logprobs: z.object({ content: z.array(TokenLogprob) }).nullable().optional(),
  /** Sampled completion token ids, in order (the stop/EOS token included when it was sampled). */
  token_ids: z.array(z.number().int()).optional(),
});
export type ChatChoice = z.infer<typeof ChatChoice>;

export const ChatCompletionResponse = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(ChatChoice),
  usage: z.object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
  }),
  /** Token ids of the rendered prompt (chat template applied), exactly what the model was fed. */
  prompt_token_ids: z.array(z.number().int()).optional(),
});
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponse>;

export const EngineHealth = z.object({
  status: z.enum(["ok", "loading", "error"]),
  backend: z.string(),
  device: z.string(),
  model: z.string(),
  max_context_tokens: z.number().int(),
  memory: z.object({ rss_bytes: z.number(), gpu_allocated_bytes: z.number().nullable() }),
  error: z.string().nullable().optional(),
});
export type EngineHealth = z.infer<typeof EngineHealth>;
