/**
 * Chat messages and the engine's OpenAI-compatible chat completion API, with the token-level extensions
 * vLLM uses (`return_token_ids` → top-level `prompt_token_ids` and per-choice `token_ids`) and two of
 * Rollbook's own (`continue_from`, `malformed_tool_calls`). The Python side is
 * gpu-runner/engine/rollbook_engine/contracts/chat.py; fixtures/chat_*.json are checked by both, and the
 * engine's tests compare its models with this file's JSON Schema (z.toJSONSchema).
 */
import { z } from "zod";
import { identifierRegExp, identifierRule } from "./identifiers";

/** A tool's name as offered to the model or forced by tool_choice: the shared grammar (identifiers.json). */
const ToolName = z.string().regex(identifierRegExp("tool_name"), `a tool name is ${identifierRule("tool_name")}`);

export const ToolCall = z.object({
  id: z.string(),
  type: z.literal("function").default("function"),
  function: z.object({
    name: z.string(),
    arguments: z.string().describe("The call's arguments as a JSON text (an object), as OpenAI sends them."),
  }),
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
    name: ToolName,
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

export const ToolChoice = z
  .union([
    z.enum(["none", "auto", "required"]),
    z.object({ type: z.literal("function"), function: z.object({ name: ToolName }) }),
  ])
  .describe(
    '"none": tools are neither shown to the model nor parsed. "auto" (the default with tools): shown, and ' +
      "calls are parsed out of the reply in the model's tool format (GET /health's tool_format). \"required\": the " +
      "reply is prefilled with the start of a call in that format (hermes: '<tool_call>\\n{\"name\": \"'), so the " +
      "model must call one of the tools. {type: 'function', function: {name}}: prefilled through the name (hermes: " +
      "through '\"arguments\":'), so it calls that one. Prefilled tokens are part of prompt_token_ids, never of the " +
      "sampled token_ids; the reply parsed (and returned) is prefill + sampled text.",
  );
export type ToolChoice = z.infer<typeof ToolChoice>;

/** OpenAI's json_schema name: letters, digits, `_` and `-`, at most 64 (what OpenAI's API refuses otherwise). */
const SchemaName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a schema name is 1 to 64 letters, digits, '_' or '-'");

export const ResponseFormat = z
  .discriminatedUnion("type", [
    z.object({ type: z.literal("text") }),
    z.object({ type: z.literal("json_object") }),
    z.object({
      type: z.literal("json_schema"),
      json_schema: z.object({
        name: SchemaName,
        description: z.string().optional(),
        schema: z.record(z.string(), z.unknown()).optional().describe("A JSON Schema; absent: any JSON object."),
        strict: z.boolean().nullable().optional(),
      }),
    }),
  ])
  .describe(
    '"json_object": the reply is one JSON object; "json_schema": one JSON value matching `json_schema.schema`. ' +
      "Either is decoded under the engine's constraint (llguidance: every sampled token keeps the reply a prefix of " +
      "valid JSON), strict or not; a schema it cannot compile is a 400 naming response_format. With tools offered " +
      "and tool_choice \"auto\" the reply may be a call, which JSON constraint would forbid: refused (force the call, or drop the tools).",
  );
export type ResponseFormat = z.infer<typeof ResponseFormat>;

export const ContinueFrom = z
  .object({
    token_ids: z
      .array(z.number().int().min(0))
      .min(1)
      .describe("The conversation so far as tokens: the previous call's prompt_token_ids + its choice's token_ids."),
    message_count: z
      .number()
      .int()
      .min(1)
      .describe(
        "How many messages at the start of `messages` those tokens are; the last of them is the assistant reply " +
          "that was sampled. Only the later messages are rendered and their tokens appended.",
      ),
  })
  .describe(
    "Rollbook extension for token-exact multi-turn rollouts: the earlier turns keep exactly the tokens the model " +
      "saw and sampled (no decode/re-encode drift, even where the template would write a tool call differently).",
  );
export type ContinueFrom = z.infer<typeof ContinueFrom>;

/** The request's shape. Rules between fields are in ValidChatCompletionRequest (kept apart so .pick works). */
export const ChatCompletionRequest = z.object({
  model: z.string().describe("Base model id, or `<run>@<step>` for a run's LoRA checkpoint."),
  messages: z.array(ChatMessage).min(1),
  temperature: z.number().min(0).max(2).optional().describe("0 samples greedily. Default 1."),
  top_p: z.number().gt(0).max(1).optional(),
  max_tokens: z.number().int().min(1).optional().describe("Clamped to the context left; default: all of it."),
  max_completion_tokens: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("What newer OpenAI clients send instead of max_tokens; with both, the smaller wins."),
  n: z.number().int().min(1).max(256).optional(),
  seed: z.number().int().optional().describe("Sample i of n uses seed + i: the same request samples the same tokens."),
  stop: z.union([z.string(), z.array(z.string())]).optional().describe("Cut the reply before the first match."),
  logprobs: z.boolean().optional().describe("Per-token logprobs of the raw (temperature 1) distribution."),
  top_logprobs: z.number().int().min(0).max(20).optional().describe("Also the k most likely tokens at each step; needs logprobs."),
  tools: z.array(ToolSpec).optional(),
  tool_choice: ToolChoice.optional(),
  parallel_tool_calls: z.boolean().optional().describe("Accepted for compatibility; every call in the reply is returned."),
  response_format: ResponseFormat.optional(),
  stream: z.boolean().optional().describe("Server-sent events: `data: <ChatCompletionChunk>` lines, then `data: [DONE]`."),
  stream_options: z
    .object({ include_usage: z.boolean().optional().describe("A last chunk with `choices: []` and the usage.") })
    .nullable()
    .optional(),
  return_token_ids: z.boolean().optional().describe("vLLM extension: return prompt and completion token ids."),
  return_tokens_as_token_ids: z
    .boolean()
    .optional()
    .describe(
      "vLLM extension (its --return-tokens-as-token-ids, per request): each logprobs token, top ones included, is " +
        "written 'token_id:<id>', so a client such as OpenPipe ART recovers the exact sampled ids from the choice alone.",
    ),
  continue_from: ContinueFrom.optional(),
  user: z
    .string()
    .max(256)
    .optional()
    .describe("OpenAI's end-user id. The engine shares batch slots fairly between users; the runner sends the run id."),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** Both sides word this rule alike (the engine's contracts/chat.py). */
export const JSON_WITH_AUTO_TOOLS =
  'a JSON reply cannot also be a tool call: with tools and tool_choice "auto", drop response_format, force the call (tool_choice "required" or a function), or drop the tools';

/** What the engine accepts: the shape plus the rules between fields, each reported on the field at fault. */
export const ValidChatCompletionRequest = ChatCompletionRequest.superRefine((req, ctx) => {
  if (req.top_logprobs !== undefined && req.top_logprobs > 0 && !req.logprobs) {
    ctx.addIssue({ code: "custom", path: ["top_logprobs"], message: "top_logprobs needs logprobs: true" });
  }
  const choice = req.tool_choice;
  if (choice !== undefined && choice !== "none" && choice !== "auto") {
    const names = (req.tools ?? []).map((t) => t.function.name);
    if (names.length === 0) {
      ctx.addIssue({ code: "custom", path: ["tool_choice"], message: "tool_choice needs tools" });
    } else if (typeof choice === "object" && !names.includes(choice.function.name)) {
      ctx.addIssue({ code: "custom", path: ["tool_choice"], message: `no tool named '${choice.function.name}' in tools` });
    }
  }
  const format = req.response_format?.type;
  if ((format === "json_object" || format === "json_schema") && (req.tools?.length ?? 0) > 0 && (choice === undefined || choice === "auto")) {
    ctx.addIssue({ code: "custom", path: ["response_format"], message: JSON_WITH_AUTO_TOOLS });
  }
  const cont = req.continue_from;
  if (cont !== undefined) {
    if (cont.message_count >= req.messages.length) {
      ctx.addIssue({
        code: "custom",
        path: ["continue_from", "message_count"],
        message: `must be less than the number of messages (${req.messages.length}): new messages must follow`,
      });
    } else if (req.messages[cont.message_count - 1]?.role !== "assistant") {
      ctx.addIssue({
        code: "custom",
        path: ["continue_from", "message_count"],
        message: "the last continued message must be the assistant reply the token ids end with",
      });
    }
  }
});

export const TopLogprob = z.object({
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.number().int()).nullable().optional().describe("The token's UTF-8 bytes (a token may hold part of a character)."),
});

export const TokenLogprob = z.object({
  token: z.string(),
  logprob: z.number(),
  bytes: z.array(z.number().int()).nullable().optional().describe("The token's UTF-8 bytes (a token may hold part of a character)."),
  top_logprobs: z.array(TopLogprob).optional().describe("The `top_logprobs` most likely tokens at this step, most likely first."),
});

export const ChoiceLogprobs = z.object({ content: z.array(TokenLogprob) });

export const MalformedToolCall = z.object({
  text: z.string().describe("The block as the model wrote it; it stays in the message content."),
  error: z.string().describe("Why it is not a call: bad JSON, no name, arguments not an object, unknown tool, unclosed tag."),
});
export type MalformedToolCall = z.infer<typeof MalformedToolCall>;

export const FinishReason = z.enum(["stop", "length", "tool_calls"]);

/** What a sampled token wrote: the reply's content, or its tool format's scaffolding (engine token_roles.py). */
export const TokenRole = z.enum(["content", "scaffolding"]);
export type TokenRole = z.infer<typeof TokenRole>;

export const ChatChoice = z.object({
  index: z.number().int(),
  message: z.object({
    role: z.literal("assistant"),
    content: z.string().nullable().describe("The reply without its parsed tool calls; null when only calls remain."),
    tool_calls: z.array(ToolCall).optional(),
  }),
  finish_reason: FinishReason.nullable().describe('"tool_calls" when the reply ended normally with parsed calls.'),
  logprobs: ChoiceLogprobs.nullable().optional(),
  token_ids: z
    .array(z.number().int())
    .optional()
    .describe("Sampled completion token ids, in order (the stop/EOS token included when it was sampled)."),
  token_roles: z
    .array(TokenRole)
    .optional()
    .describe(
      "Rollbook extension, with return_token_ids (not streamed): one per token id. content: the reply's text or a parsed call's " +
        "name and arguments; scaffolding: the tool format's markers and call envelope, end of turn (docs/sdk.md's table).",
    ),
  malformed_tool_calls: z
    .array(MalformedToolCall)
    .optional()
    .describe("Rollbook extension: tool calls (e.g. `<tool_call>` blocks) that did not parse, so a scenario can count or penalise them."),
});
export type ChatChoice = z.infer<typeof ChatChoice>;

export const Usage = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

export const ChatCompletionResponse = z.object({
  id: z.string(),
  object: z.literal("chat.completion"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(ChatChoice),
  usage: Usage,
  prompt_token_ids: z
    .array(z.number().int())
    .optional()
    .describe("Token ids of the rendered prompt (chat template applied, prefill included), exactly what the model was fed."),
});
export type ChatCompletionResponse = z.infer<typeof ChatCompletionResponse>;

export const ToolCallDelta = z.object({
  index: z.number().int(),
  id: z.string().optional(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

export const ChunkChoice = z.object({
  index: z.number().int(),
  delta: z.object({
    role: z.literal("assistant").optional().describe("Only in a choice's first chunk."),
    content: z.string().nullable().optional(),
    tool_calls: z
      .array(ToolCallDelta)
      .optional()
      .describe(
        "A forced call (tool_choice required/named): id, type and name first, then arguments fragments as sampled; " +
          "an unconstrained call: sent whole in the last chunk, once the reply has ended and been parsed.",
      ),
  }),
  finish_reason: FinishReason.nullable().describe("Set on a choice's last chunk only."),
  logprobs: ChoiceLogprobs.nullable().optional().describe("For the tokens this chunk carries."),
  token_ids: z.array(z.number().int()).optional().describe("With return_token_ids: the sampled ids this chunk carries."),
  malformed_tool_calls: z.array(MalformedToolCall).optional().describe("On the choice's last chunk."),
});

export const ChatCompletionChunk = z.object({
  id: z.string(),
  object: z.literal("chat.completion.chunk"),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(ChunkChoice),
  usage: Usage.nullable().optional().describe("With stream_options.include_usage: in the last chunk (choices: [])."),
  prompt_token_ids: z.array(z.number().int()).optional().describe("With return_token_ids: in the first chunk."),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunk>;

export const EngineHealth = z.object({
  status: z.enum(["ok", "loading", "error"]),
  backend: z.string(),
  device: z.string(),
  model: z.string(),
  max_context_tokens: z.number().int(),
  memory: z.object({ rss_bytes: z.number(), gpu_allocated_bytes: z.number().nullable() }),
  error: z.string().nullable().optional(),
  /** Rows the engine samples in one batch: the runner's fair queue keeps at most this many chat calls on it. */
  batch_capacity: z.number().int().min(1).nullable().optional(),
  /** The tool-call format read from the model's chat template: how its calls are spelled, parsed and prefilled. */
  tool_format: z.enum(["hermes", "qwen3_coder", "llama3_json", "mistral"]).nullable().optional(),
});
export type EngineHealth = z.infer<typeof EngineHealth>;
