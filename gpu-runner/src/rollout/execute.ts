/**
 * Runs one rollout: the user's scenario and reward in the sandbox, with a `chat` callback that samples the
 * engine and records every turn itself (prompt token ids, sampled token ids and logprobs, timings), so the
 * training sample is exactly what the model saw and sampled — user code cannot forge it.
 */
import {
  type ChatMessage,
  type ChatCompletionRequest,
  type RolloutError,
  type RunConfig,
  type Trajectory,
  type TrainSample,
} from "../../contracts";
import { runRollout, type SandboxChatResult } from "../sandbox/run-rollout";
import { type ChatOptions } from "../sandbox/chat-args";
import { type CompiledExperiment } from "../experiment/compile";
import { type TaskRow } from "../experiment/tasks";
import { type EngineClient, EngineError } from "../engine/client";
import { buildTrainSample, type SampledTurn } from "./training-sample";
import { deriveSeed } from "./seed";

/** What user code may pass to ctx.chat and gets back: the sandbox's own types, validated there. */
type UserChatOptions = ChatOptions;
type ChatReply = SandboxChatResult;

export interface RecordedTurn extends SampledTurn {
  modelMs: number;
  finishReason: string | null;
}

export interface ExecuteRolloutInput {
  engine: Pick<EngineClient, "chat">;
  compiled: CompiledExperiment;
  runId: string;
  config: RunConfig;
  task: TaskRow;
  split: "train" | "val";
  step: number;
  group: number;
  rolloutIndex: number;
  /** Base model id or `<run>@<step>`. */
  model: string;
  /** Overrides of config.sampling (eval uses eval_temperature). User options still win over these. */
  samplingOverrides?: { temperature?: number };
  /** Distinguishes eval rollouts' ids and seeds from training ones. */
  idPrefix?: string;
  signal?: AbortSignal;
}

export interface ExecutedRollout {
  trajectory: Trajectory;
  /** The token-exact training sample, or null when the rollout failed (or made no model call). */
  sample: TrainSample | null;
  turns: RecordedTurn[];
}

export class ContextLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContextLimitError";
  }
}

function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return (
    a.role === b.role &&
    (a.content ?? "") === (b.content ?? "") &&
    (a.tool_call_id ?? null) === (b.tool_call_id ?? null) &&
    JSON.stringify(a.tool_calls ?? []) === JSON.stringify(b.tool_calls ?? [])
  );
}

function normaliseMessages(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new TypeError("ctx.chat needs a non-empty array of messages");
  return messages.map((m, i) => {
    const msg = m as Partial<ChatMessage> | null;
    if (!msg || typeof msg !== "object" || !["system", "user", "assistant", "tool"].includes(String(msg.role))) {
      throw new TypeError(`ctx.chat: message ${i} needs a role of system, user, assistant or tool`);
    }
    const out: ChatMessage = { role: msg.role!, content: msg.content == null ? null : String(msg.content) };
    if (msg.name !== undefined) out.name = String(msg.name);
    if (msg.tool_calls !== undefined) out.tool_calls = msg.tool_calls;
    if (msg.tool_call_id !== undefined) out.tool_call_id = String(msg.tool_call_id);
    return out;
  });
}

export function trajectoryId(runId: string, prefix: string, step: number, group: number, rollout: number): string {
  return `${runId}:${prefix}${step}:g${group}:r${rollout}`;
}

export async function executeRollout(input: ExecuteRolloutInput): Promise<ExecutedRollout> {
  const { engine, config, step, group, rolloutIndex, model, signal } = input;
  const prefix = input.idPrefix ?? "s";
  const id = trajectoryId(input.runId, prefix, step, group, rolloutIndex);
  const turns: RecordedTurn[] = [];
  const transcript: ChatMessage[] = [];
  let modelError: string | null = null;
  let contextError: string | null = null;
  const startedAt = Date.now();

  const chat = async (rawMessages: unknown, rawOptions?: unknown): Promise<ChatReply> => {
    const messages = normaliseMessages(rawMessages);
    const options = (rawOptions ?? {}) as UserChatOptions;
    const turnIndex = turns.length;
    // Context budget: what the previous turn already used is a lower bound on this prompt's length.
    const last = turns.at(-1);
    const used = last ? last.promptTokenIds.length + last.completionTokenIds.length : 0;
    const budget = config.max_context_tokens - used;
    if (budget <= 0) {
      contextError = `context limit: ${used} tokens already used of max_context_tokens ${config.max_context_tokens}`;
      throw new ContextLimitError(contextError);
    }
    const wanted = options.max_tokens ?? config.sampling.max_tokens;
    const request: ChatCompletionRequest = {
      model,
      messages,
      temperature: options.temperature ?? input.samplingOverrides?.temperature ?? config.sampling.temperature,
      top_p: options.top_p ?? config.sampling.top_p,
      max_tokens: Math.max(1, Math.min(wanted, budget)),
      n: 1,
      seed: options.seed ?? deriveSeed(config.seed, input.runId, prefix, step, group, rolloutIndex, turnIndex),
      logprobs: true,
      return_token_ids: true,
    };
    if (options.stop !== undefined) request.stop = options.stop;
    if (options.tools !== undefined) request.tools = options.tools;

    const t0 = performance.now();
    let response;
    try {
      response = await engine.chat(request, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      modelError = err instanceof EngineError ? err.message : `model call failed: ${(err as Error).message}`;
      throw new Error(modelError);
    }
    const modelMs = performance.now() - t0;
    const choice = response.choices[0];
    if (!choice) {
      modelError = "engine returned no choices";
      throw new Error(modelError);
    }
    const promptIds = response.prompt_token_ids ?? [];
    const completionIds = choice.token_ids ?? [];
    const logprobs = choice.logprobs?.content ? choice.logprobs.content.map((l) => l.logprob) : null;
    turns.push({
      promptTokenIds: promptIds,
      completionTokenIds: completionIds,
      completionLogprobs: logprobs,
      modelMs,
      finishReason: choice.finish_reason,
    });
    const total = promptIds.length + completionIds.length;
    if (total > config.max_context_tokens) {
      contextError = `context limit: ${total} tokens > max_context_tokens ${config.max_context_tokens}`;
      throw new ContextLimitError(contextError);
    }

    // Transcript: append only what is new when this call continues the conversation so far.
    const continues =
      transcript.length <= messages.length && transcript.every((m, i) => sameMessage(m, messages[i] as ChatMessage));
    transcript.push(...(continues ? messages.slice(transcript.length) : messages));
    const toolCalls = choice.message.tool_calls ?? [];
    const message: ChatMessage = { role: "assistant", content: choice.message.content ?? "" };
    if (toolCalls.length) message.tool_calls = toolCalls;
    transcript.push(message);
    return { content: choice.message.content ?? "", finishReason: choice.finish_reason, toolCalls, message };
  };

  const result = await runRollout({
    compiled: input.compiled,
    task: input.task.data,
    split: input.split,
    step,
    rolloutIndex,
    limits: config.limits,
    chat,
    getMessages: () => transcript.map((m) => ({ ...m })),
    signal,
  });

  let error: RolloutError | null = result.error;
  if (error && modelError && error.kind === "thrown") error = { ...error, kind: "model", message: modelError };
  if (error && contextError && error.kind === "thrown") error = { ...error, message: contextError };
  let reward: number | null = error ? null : result.reward;
  if (!error && (typeof reward !== "number" || !Number.isFinite(reward))) {
    error = { kind: "reward", message: `reward is ${String(reward)}, not a finite number` };
    reward = null;
  }

  let sample: TrainSample | null = null;
  if (!error && reward !== null && turns.length > 0) {
    try {
      sample = buildTrainSample(id, reward, turns);
    } catch (err) {
      error = { kind: "model", message: (err as Error).message };
      reward = null;
    }
  }

  const completionTokens = turns.reduce((n, t) => n + t.completionTokenIds.length, 0);
  const promptTokens = sample
    ? sample.sequences.reduce((n, s) => n + s.mask.filter((m) => m === 0).length, 0)
    : turns.reduce((n, t) => n + t.promptTokenIds.length, 0);

  const trajectory: Trajectory = {
    id,
    step,
    group,
    task_index: input.task.index,
    split: input.split,
    task: input.task.data,
    messages: transcript,
    reward,
    metrics: result.metrics ?? {},
    error,
    model,
    tokens: { prompt: promptTokens, completion: completionTokens },
    timings: {
      started_at: startedAt,
      duration_ms: result.durationMs,
      model_ms: turns.reduce((n, t) => n + t.modelMs, 0),
    },
    logs: result.logs ?? [],
  };
  return { trajectory, sample, turns };
}
