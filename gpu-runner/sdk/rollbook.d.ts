/**
 * The scenario SDK: the only API user code sees. Scenario and reward files import types from "rollbook";
 * at run time the runner provides `ctx` inside an isolated V8 isolate (no Node APIs, no network: the model
 * is reached only through ctx.chat, and the runner records every sampled token itself).
 * This file is loaded into Monaco (addExtraLib) and into the runner's type check, so both see the same API.
 */
declare module "rollbook" {
  export interface ToolCall {
    id: string;
    type: "function";
    function: { name: string; arguments: string };
  }

  export interface ChatMessage {
    role: "system" | "user" | "assistant" | "tool";
    content: string | null;
    name?: string;
    tool_calls?: ToolCall[];
    tool_call_id?: string;
  }

  export interface ToolSpec {
    type: "function";
    function: { name: string; description?: string; parameters?: Record<string, unknown> };
  }

  export interface ChatOptions {
    temperature?: number;
    top_p?: number;
    max_tokens?: number;
    stop?: string | string[];
    seed?: number;
    tools?: ToolSpec[];
  }

  export interface ChatResult {
    /** The assistant's reply text ("" when it only called tools). */
    content: string;
    finishReason: "stop" | "length" | "tool_calls" | null;
    toolCalls: ToolCall[];
    /** The reply as a message, ready to append to the conversation. */
    message: ChatMessage;
  }

  export interface RolloutContext<TTask = unknown> {
    /** The task: one line of tasks.jsonl, parsed. */
    readonly task: TTask;
    readonly split: "train" | "val";
    readonly step: number;
    /** Which rollout of its group (0-based): GRPO samples each task several times. */
    readonly rolloutIndex: number;
    /** Sample the policy. Every call is recorded in the trajectory, tokens and logprobs included. */
    chat(messages: ChatMessage[], options?: ChatOptions): Promise<ChatResult>;
    /** A plain-text line in the rollout's log, shown beside its transcript. */
    log(...args: unknown[]): void;
    /** A numeric metric on this rollout (averaged per step on the charts). */
    metric(name: string, value: number): void;
  }

  export interface RewardInput<TTask = unknown, TOutput = unknown> {
    task: TTask;
    /** What the scenario's default export returned. */
    output: TOutput;
    /** The whole conversation the rollout produced. */
    messages: ChatMessage[];
  }

  /** A finite number, or a number with extra metrics. NaN, Infinity or anything else fails the rollout. */
  export type RewardResult = number | { reward: number; metrics?: Record<string, number> };

  /** scenario.ts: `export default async function rollout(ctx) { ... }` */
  export type Scenario<TTask = unknown, TOutput = unknown> = (ctx: RolloutContext<TTask>) => Promise<TOutput> | TOutput;

  /** reward.ts: `export default function reward(input) { ... }` */
  export type RewardFn<TTask = unknown, TOutput = unknown> = (
    input: RewardInput<TTask, TOutput>,
  ) => RewardResult | Promise<RewardResult>;
}
