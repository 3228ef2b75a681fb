/**
 * The scenario SDK: `import { ... } from "rollbook"` in scenario.ts, reward.ts and lib/*.ts.
 *
 * This file is the one source of the SDK's types. Monaco loads it as the module "rollbook" (hovers and
 * completions), the runner type-checks user code against it, the runtime that runs inside the sandbox
 * (gpu-runner/sdk/runtime/) is typed against it, and contracts/sdk/sdk-contract.typetest.ts ties its chat
 * types to the runtime contracts (contracts/chat.ts), so none of them can drift.
 *
 * User code runs in a V8 isolate: no Node APIs, no network, no timers. The model is reached only through
 * `ctx.chat` (every sampled token is recorded by the runner itself, so user code cannot forge training
 * data), tools run inside the isolate, MCP servers are reached through `ctx.mcp`, judges through the
 * judge model the experiment configures.
 */
import type * as z from "zod";

// ─── Chat, in the OpenAI format ─────────────────────────────────────────────────────────────────────────

export interface ToolCall {
  id: string;
  type: "function";
  function: {
    name: string;
    /** The arguments as the model wrote them: a JSON string (it may not parse — check it). */
    arguments: string;
  };
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  name?: string;
  /** On assistant messages: the tools the model called. */
  tool_calls?: ToolCall[];
  /** On tool messages: which call this is the result of. */
  tool_call_id?: string;
}

/** A tool as the model is told about it (OpenAI's function spec). */
export interface ToolSpec {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** "auto": the model decides; "required": it must call a tool; a named function: it must call that one. */
export type ToolChoice = "none" | "auto" | "required" | { type: "function"; function: { name: string } };

export interface ChatOptions {
  /** Sampling temperature (config.sampling.temperature by default). Ignored in evaluation: config decides. */
  temperature?: number;
  top_p?: number;
  /** Completion tokens for this call (config.sampling.max_tokens by default; the context budget caps it). */
  max_tokens?: number;
  stop?: string | string[];
  seed?: number;
  /** Tools to offer: `tool(...)` definitions, MCP tools, or plain specs. */
  tools?: readonly (AnyTool | ToolSpec)[];
  tool_choice?: ToolChoice;
}

/** A tool call the model wrote (in its family's format) that could not be parsed; it stays in `content` too. */
export interface MalformedToolCall {
  /** The raw text of the block. */
  text: string;
  /** Why it was refused (bad JSON, no name, arguments not an object, unclosed tag…). */
  error: string;
}

export interface ChatResult {
  /** The reply's text, tool calls removed ("" when it only called tools). */
  content: string;
  finishReason: "stop" | "length" | "tool_calls" | null;
  /** Well-formed tool calls, parsed. */
  toolCalls: ToolCall[];
  /** Tool calls the model botched; counted in the rollout's `malformed_tool_calls` metric. */
  malformedToolCalls: MalformedToolCall[];
  /** The reply as a message, ready to append to the conversation. */
  message: ChatMessage;
  usage: { promptTokens: number; completionTokens: number };
}

// ─── Tools ──────────────────────────────────────────────────────────────────────────────────────────────

/** A JSON Schema object (draft 2020-12), as in OpenAI's `parameters`. */
export type JsonSchema = { [key: string]: unknown };

/** The arguments `execute` receives: the zod schema's output, or a plain object for a JSON Schema. */
export type ToolArgs<P> = P extends z.ZodType ? z.output<P> : { [key: string]: unknown };

export interface ToolContext {
  /** The rollout the tool runs in (log, metric, mcp, task…). */
  ctx: RolloutContext<unknown>;
  /** The id of the call being answered. */
  toolCallId: string;
}

export interface Tool<TArgs = { [key: string]: unknown }, TResult = unknown> {
  readonly name: string;
  readonly description: string;
  /** The arguments' JSON Schema, as the model sees it. */
  readonly parameters: JsonSchema;
  /** The function spec offered to the model. */
  readonly spec: ToolSpec;
  /** Checks the arguments the model wrote (a JSON string) against the parameters. */
  parseArguments(json: string): { ok: true; args: TArgs } | { ok: false; error: string };
  /** Runs the tool (inside the sandbox). What it returns becomes the tool message: strings as is, else JSON. */
  execute(args: TArgs, context: ToolContext): TResult | Promise<TResult>;
}

/* eslint-disable-next-line @typescript-eslint/no-explicit-any -- any tool fits a list of tools */
export type AnyTool = Tool<any, unknown>;

export interface ToolDefinition<P extends z.ZodType | JsonSchema, R> {
  /** What the model calls it: 1–64 letters, digits, `_`, `.` and `-` (OpenAI's rule plus MCP's `.`; contracts/identifiers.json). */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** A zod schema (`z.object({...})`) or a JSON Schema of the arguments object. */
  parameters: P;
  execute(args: ToolArgs<P>, context: ToolContext): R | Promise<R>;
}

/**
 * Defines a tool the model can call. The arguments are checked against `parameters` before `execute` runs;
 * a call whose arguments do not fit is answered with the error instead (and counted as a tool error).
 *
 *   const add = tool({
 *     name: "add", description: "Add two numbers",
 *     parameters: z.object({ a: z.number(), b: z.number() }),
 *     execute: ({ a, b }) => a + b,
 *   });
 */
export function tool<const P extends z.ZodType | JsonSchema, R>(definition: ToolDefinition<P, R>): Tool<ToolArgs<P>, Awaited<R>>;

// ─── The agent loop ─────────────────────────────────────────────────────────────────────────────────────

export interface AgentOptions {
  /** The conversation so far (system and user messages). */
  messages: ChatMessage[];
  /** Tools the model may call; each call runs `execute` and its result goes back as a tool message. */
  tools?: readonly AnyTool[];
  /** Model calls at most (default 8). */
  maxTurns?: number;
  tool_choice?: ToolChoice;
  /** Sampling options for every call. */
  chat?: Omit<ChatOptions, "tools" | "tool_choice">;
  /**
   * A tool call that cannot be parsed, names an unknown tool or has arguments that do not fit:
   * "retry" (default) answers it with the error and lets the model try again; "stop" ends the loop.
   */
  onToolError?: "retry" | "stop";
  /** Longest tool result sent back to the model, in characters (longer ones are cut, with a note). */
  maxToolResultChars?: number;
}

export interface AgentResult {
  /** The whole conversation: the input messages, every reply and every tool result. */
  messages: ChatMessage[];
  /** The text of the last reply. */
  answer: string;
  /** Model calls made. */
  turns: number;
  /** Tool calls executed successfully. */
  toolCalls: number;
  /** Tool calls that could not be parsed (engine-side) or named no known tool. */
  malformedToolCalls: number;
  /** Tool calls whose arguments did not fit or whose `execute` threw. */
  toolErrors: number;
  /** "answer": the model replied without calling a tool; "length": its reply was cut by max_tokens. */
  stopReason: "answer" | "max_turns" | "length" | "tool_error";
}

/**
 * The standard agent loop: call the model with the tools, run the tools it calls, append their results,
 * and repeat until it answers without a tool call or `maxTurns` is reached. The runner records every
 * rollout's `turns`, `tool_calls` and `malformed_tool_calls` itself; runAgent adds `tool_errors`.
 */
export function runAgent(ctx: RolloutContext<unknown>, options: AgentOptions): Promise<AgentResult>;

// ─── MCP servers ────────────────────────────────────────────────────────────────────────────────────────

export interface McpToolResult {
  /** The text content of the result, joined (other content kinds summarised). */
  text: string;
  /** The server reported the call as failed. */
  isError: boolean;
  /** The server's structured content, when it sent one. */
  structured?: unknown;
}

export interface McpClient {
  /** The experiment's MCP servers (config.json → mcp.servers), in config order. */
  readonly servers: readonly string[];
  /** The tools of one server (or of every server), as tools for `runAgent` and `ctx.chat`. */
  tools(server?: string): Promise<Tool<{ [key: string]: unknown }, McpToolResult>[]>;
  /** Calls a tool on a server directly. A server that failed to start rejects with its reason. */
  call(server: string, tool: string, args?: { [key: string]: unknown }): Promise<McpToolResult>;
}

// ─── Scenarios ──────────────────────────────────────────────────────────────────────────────────────────

export interface RolloutContext<TTask = unknown> {
  /** The task: one row of tasks.jsonl, parsed (and checked against `taskSchema` if scenario.ts exports one). */
  readonly task: TTask;
  readonly split: "train" | "val";
  readonly step: number;
  /** Which group of the step this rollout belongs to. */
  readonly group: number;
  /** Which rollout of its group (0-based): GRPO samples each task several times. */
  readonly rolloutIndex: number;
  /** Samples the policy. Every call is recorded in the trajectory, tokens and logprobs included. */
  chat(messages: ChatMessage[], options?: ChatOptions): Promise<ChatResult>;
  /** The experiment's MCP servers. */
  readonly mcp: McpClient;
  /** A plain-text line in the rollout's log, shown beside its transcript. */
  log(...args: unknown[]): void;
  /** A numeric metric on this rollout (averaged per step on the charts). */
  metric(name: string, value: number): void;
}

/** scenario.ts: `export default async function rollout(ctx) { ... }` — what it returns is the `output`. */
export type Scenario<TTask = unknown, TOutput = unknown> = (ctx: RolloutContext<TTask>) => Promise<TOutput> | TOutput;

// ─── Rewards ────────────────────────────────────────────────────────────────────────────────────────────

export interface RewardInput<TTask = unknown, TOutput = unknown> {
  task: TTask;
  /** What the scenario's default export returned. */
  output: TOutput;
  /** The whole conversation the rollout produced. */
  messages: ChatMessage[];
}

/** A finite number, or a number with extra metrics. NaN, Infinity or anything else fails the rollout. */
export type RewardResult = number | { reward: number; metrics?: { [name: string]: number } };

/** reward.ts: `export default function reward(input) { ... }` */
export type RewardFn<TTask = unknown, TOutput = unknown> = (
  input: RewardInput<TTask, TOutput>,
) => RewardResult | Promise<RewardResult>;

export interface GroupRollout<TOutput = unknown> {
  output: TOutput;
  messages: ChatMessage[];
  /** The reward the default export gave this rollout (kept as the metric `independent_reward`). */
  reward: number;
  metrics: { [name: string]: number };
}

export interface GroupRewardInput<TTask = unknown, TOutput = unknown> {
  task: TTask;
  /** The group's rollouts that finished without error, in rollout order. */
  rollouts: GroupRollout<TOutput>[];
}

/** One reward per rollout, in order; or with per-rollout metrics. */
export type GroupRewardResult = number[] | { rewards: number[]; metrics?: { [name: string]: number }[] };

/**
 * reward.ts may also `export const groupReward = ...`: it scores a group's rollouts together, after each got
 * its own reward from the default export, and its rewards replace them (the earlier ones stay as the
 * metric `independent_reward`).
 */
export type GroupRewardFn<TTask = unknown, TOutput = unknown> = (
  input: GroupRewardInput<TTask, TOutput>,
) => GroupRewardResult | Promise<GroupRewardResult>;

// ─── Judges ─────────────────────────────────────────────────────────────────────────────────────────────

export interface MatchOptions {
  /** Compare letter case too. Default false: "Paris" matches "paris" (small models' casing is noise). */
  caseSensitive?: boolean;
  /** Remove surrounding whitespace. Default true. */
  trim?: boolean;
  /** Count any run of whitespace (newlines, tabs) as one space. Default true. */
  collapseWhitespace?: boolean;
  /**
   * Remove surrounding quotes, markdown emphasis (`*`, `_`), brackets, and trailing sentence punctuation
   * (`.,;:!?`), so `"**(B).**"` matches `B`. A leading `-`, `+` or `.` is kept: "-5" is not "5". Default true.
   */
  stripPunctuation?: boolean;
}

/**
 * `output` equals `expected` (or one of several accepted answers) after normalising: Unicode NFKC, straight
 * quotes, trimmed, spaces collapsed, surrounding punctuation stripped, case ignored (see MatchOptions).
 * @example exactMatch("  **Paris.** ", "paris") // true
 */
export function exactMatch(output: string | null | undefined, expected: string | readonly string[], options?: MatchOptions): boolean;

export interface RegexOptions {
  /** The whole output must match (after exactMatch's trimming), not a part of it. Default false. */
  full?: boolean;
  /** For a string pattern: match letter case too. Default false (the `i` flag). A RegExp keeps its own flags. */
  caseSensitive?: boolean;
  /** Which match regexFind reports when there are several. Default "last": a model's final statement wins. */
  occurrence?: "first" | "last";
  /** Longer outputs are searched in their last `maxLength` characters. Default 100,000. */
  maxLength?: number;
}

/** `output` matches a regular expression (a string pattern is compiled case-insensitively). */
export function regexMatch(output: string | null | undefined, pattern: RegExp | string, options?: RegexOptions): boolean;

export interface RegexFindResult {
  /** The matched text. */
  match: string;
  /** Capture groups 1..n (undefined where a group did not take part). */
  groups: Array<string | undefined>;
  /** Named capture groups. */
  named: Record<string, string | undefined>;
  /** Where the match starts in the searched text. */
  index: number;
}

/** The last (or first) match of a pattern in `output`, with its groups; null when there is none. */
export function regexFind(output: string | null | undefined, pattern: RegExp | string, options?: RegexOptions): RegexFindResult | null;

/**
 * The final answer of a worked solution: the last `\boxed{…}`, else the text after the last "answer is" /
 * "Answer:" / "####", else what follows the last `=` on the last line, else the last number. null when there
 * is none, or when the last `\boxed{` was never closed (the reply was cut off).
 */
export function extractAnswer(text: string): string | null;

/** An exact value: num/den reduced; `percent` when it was written with % (the value is already /100). */
export interface MathValue {
  readonly num: bigint;
  readonly den: bigint;
  readonly percent: boolean;
}

/**
 * The exact value of one math answer: integers of any size, decimals, fractions (`3/4`, `\frac{3}{4}`), mixed
 * numbers, percentages, thousands separators and currency or units stripped. null unless the text is exactly
 * one number ("1, 2", "3:30", "2024-01-05" and "5 apples and 3 pears" are null).
 */
export function parseMathValue(text: string): MathValue | null;

export interface MathEqualOptions {
  /** Accept |answer − expected| ≤ relTol × max(|answer|, |expected|), e.g. 1e-6. Default 0: exact. */
  relTol?: number;
  /** Run extractAnswer on `answer` first, so a whole worked solution can be passed. Default false. */
  extract?: boolean;
  /** "flexible" (default): "50%" equals both 0.5 and 50; "strict": 0.5 only. */
  percent?: "flexible" | "strict";
}

/**
 * Whether `answer` and `expected` are the same number, compared exactly (BigInt fractions, never floats):
 * "0.5" = "1/2" = "\frac{1}{2}", "1,234" = 1234, "$12.00" = "12 dollars" = 12.
 * @example mathEqual(extractAnswer(output), task.answer)
 * @example mathEqual(output, task.answer, { extract: true })
 */
export function mathEqual(answer: string | number | bigint | null | undefined, expected: string | number | bigint, options?: MathEqualOptions): boolean;

export interface JudgeUsage {
  promptTokens: number;
  completionTokens: number;
  /** In US dollars, from config.judge's prices (0 for the local engine). */
  costUsd: number;
}

export interface JudgeChatOptions {
  temperature?: number;
  max_tokens?: number;
}

/**
 * One call to the judge model the experiment configures (config.json → judge: the local engine's base
 * model by default, or any OpenAI-compatible endpoint). Judge calls never train the policy; their tokens
 * and cost are counted on the rollout (`judge_tokens`, `judge_cost_usd`).
 */
export function judgeChat(messages: ChatMessage[], options?: JudgeChatOptions): Promise<{ content: string; usage: JudgeUsage }>;

export interface LlmJudgeOptions {
  /** What a good answer does, in words. */
  rubric: string;
  /** A reference answer the judge may compare against. */
  reference?: string;
}

export interface JudgeResult {
  /** In [0, 1]. */
  score: number;
  explanation: string;
  usage: JudgeUsage;
}

/** Scores one rollout from 0 to 1 against a rubric with the judge model. Throws if no score can be read. */
export function llmJudge(input: { task: unknown; output: unknown; messages?: ChatMessage[] }, options: LlmJudgeOptions): Promise<JudgeResult>;

export interface RulerOptions {
  /** What a good trajectory does; a sensible default for "the agent achieved its goal well" is used. */
  rubric?: string;
}

/**
 * A relative judge (RULER): the judge reads every rollout of a group at once — the messages they share
 * sent once — and scores each from 0 to 1 relative to the others. Use it as the group reward:
 *
 *   export const groupReward = rulerJudge({ rubric: "Solves the task in few steps" });
 */
export function rulerJudge(options?: RulerOptions): GroupRewardFn<unknown, unknown>;
