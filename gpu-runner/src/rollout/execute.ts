/**
 * Runs one rollout: the user's scenario and reward in the sandbox, with the runner's side of the bridge —
 * `chat` samples the engine and records every turn itself (prompt token ids, sampled token ids and logprobs,
 * timings), so the training sample is exactly what the model saw and sampled and user code cannot forge it;
 * `judge` and `mcp` go to the run's judge model and MCP servers. What the runner can count itself (turns,
 * tool calls, malformed tool calls, judge tokens and cost) it records as the rollout's metrics, after the
 * user's, so they cannot be overridden.
 */
import {
  MAX_RECORDED_OUTPUT_CHARS,
  type ChatCompletionRequest,
  type ChatMessage,
  type RolloutError,
  type RunConfig,
  type ToolSpec,
  type Trajectory,
  type TrajectoryTurn,
  type TrainSample,
} from "../../../contracts";
import type { ChatResult } from "../../../contracts/sdk/rollbook";
import { runRollout, type RolloutHost } from "../sandbox/run-rollout";
import type { ChatOptions } from "../sandbox/chat-args";
import { type CompiledExperiment } from "../experiment/compile";
import { type TaskRow } from "../experiment/tasks";
import { type EngineClient, EngineError } from "../engine/client";
import { type EngineWatch, isConnectionCut, isTransportFailure, restartCause, restartSince } from "../engine/restart-recovery";
import type { FairQueue } from "../engine/fair-queue";
import { RolloutClock } from "../sandbox/rollout-clock";
import type { CpuUse } from "../sandbox/cpu/cpu-meter";
import type { SandboxPlacement } from "../sandbox/cpu/share";
import type { JudgeClient } from "../judge/judge-client";
import { buildTrainSample, type SampledTurn } from "./training-sample";
import { type RunMcp } from "./run-mcp";
import { deriveSeed } from "./seed";
import { argumentsProblem } from "../mcp/tool-arguments";

export interface RecordedTurn extends SampledTurn {
  modelMs: number;
  finishReason: string | null;
  /** The messages this call was made with, and the reply it returned: what a follow-up call must extend. */
  requestMessages: ChatMessage[];
  reply: ChatMessage;
  tools: ToolSpec[] | undefined;
}

/** The run's services a rollout uses. */
export interface RolloutServices {
  engine: Pick<EngineClient, "chat">;
  /**
   * The runner's fair queue in front of the engine (engine/fair-queue.ts): every ctx.chat waits there for a
   * slot. Absent (tests with a stand-in engine): calls go straight to the engine.
   */
  slots?: Pick<FairQueue, "run">;
  judge: JudgeClient;
  mcp: RunMcp;
  /** The supervisor's view of the engine: a model call cut by an engine restart is retried once on the new engine. */
  engineWatch?: EngineWatch;
}

export interface ExecuteRolloutInput {
  services: RolloutServices;
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
  /** Distinguishes eval rollouts' ids and seeds from training ones. */
  idPrefix?: string;
  signal?: AbortSignal;
  /** Whose CPU share its sandbox computes under: its run's, in its workspace's. */
  placement?: SandboxPlacement;
}

export interface ExecutedRollout {
  trajectory: Trajectory;
  /** The token-exact training sample, or null when the rollout failed (or made no model call). */
  sample: TrainSample | null;
  turns: RecordedTurn[];
  /** What the scenario returned (the group reward reads it). */
  output: unknown;
}

export class ContextLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ContextLimitError";
  }
}

export function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return (
    a.role === b.role &&
    (a.content ?? "") === (b.content ?? "") &&
    (a.tool_call_id ?? null) === (b.tool_call_id ?? null) &&
    (a.name ?? null) === (b.name ?? null) &&
    JSON.stringify(a.tool_calls ?? []) === JSON.stringify(b.tool_calls ?? [])
  );
}

/** `messages` starts with every message of `prefix`. */
function extendsConversation(messages: readonly ChatMessage[], prefix: readonly ChatMessage[]): boolean {
  return messages.length > prefix.length && prefix.every((m, i) => sameMessage(m, messages[i] as ChatMessage));
}

export function trajectoryId(runId: string, prefix: string, step: number, group: number, rollout: number): string {
  return `${runId}:${prefix}${step}:g${group}:r${rollout}`;
}

/**
 * A tool call names a tool that was offered, with arguments that are a JSON object matching the parameters
 * it was offered with (a wrong argument name or type is as malformed as broken JSON; an MCP server is not
 * even sent such a call).
 */
function wellFormed(call: { function: { name: string; arguments: string } }, offered: ReadonlyMap<string, ToolSpec>): boolean {
  const spec = offered.get(call.function.name);
  if (!spec) return false;
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments || "{}");
  } catch {
    return false;
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) return false;
  const schema = spec.function.parameters;
  return schema === undefined || argumentsProblem(schema, args as Record<string, unknown>) === null;
}

export async function executeRollout(input: ExecuteRolloutInput): Promise<ExecutedRollout> {
  const { services, config, step, group, rolloutIndex, model, signal } = input;
  const prefix = input.idPrefix ?? "s";
  const id = trajectoryId(input.runId, prefix, step, group, rolloutIndex);
  const evaluating = input.split === "val";
  const turns: RecordedTurn[] = [];
  const transcript: ChatMessage[] = [];
  /** Per model call: the transcript message it sampled, its tokens and latency (the transcript shows them per turn). */
  const turnFigures: TrajectoryTurn[] = [];
  const counts = { toolsOffered: false, toolCalls: 0, malformed: 0 };
  /**
   * Model calls sent and not yet answered, in the order they were made. A rollout cut while waiting (its
   * timeout, a stopped run) still shows what it was waiting on: these prompts go into the transcript then.
   */
  const waiting = new Set<{ turn: number; messages: ChatMessage[] }>();
  /** Appends a call's messages to the transcript: only what is new when it continues the conversation so far. */
  const recordPrompt = (messages: readonly ChatMessage[]) => {
    const continues = transcript.length <= messages.length && transcript.every((m, i) => sameMessage(m, messages[i] as ChatMessage));
    transcript.push(...(continues ? messages.slice(transcript.length) : messages));
  };
  const notes: string[] = [];
  let modelError: string | null = null;
  /** What the failed model call is filed as: the engine's failure, or the runner's lost connection to it. */
  // (Asserted, not annotated: it is set inside `chat`, which narrowing by assignment does not see.)
  let modelErrorKind = "model" as "model" | "engine_connection";
  const startedAt = Date.now();
  // What the wall-clock limit counts: paused while this rollout only waits for an engine slot.
  const clock = new RolloutClock();

  const chat = async (messages: ChatMessage[], options: ChatOptions, gateSignal: AbortSignal): Promise<ChatResult> => {
    const turnIndex = turns.length;
    const last = turns.at(-1);
    // Context budget: what the previous turn already used is a lower bound on this prompt's length.
    const used = last ? last.promptTokenIds.length + last.completionTokenIds.length : 0;
    const budget = config.max_context_tokens - used;
    if (budget <= 0) throw new ContextLimitError(`context limit: ${used} tokens already used of max_context_tokens ${config.max_context_tokens}`);

    // Evaluation decoding is the config's (greedy by default); a scenario's per-call options cannot change it.
    if (evaluating && (options.temperature !== undefined || options.top_p !== undefined || options.seed !== undefined) && notes.length === 0) {
      notes.push(`evaluation: ctx.chat's temperature/top_p/seed ignored; evaluation decodes with config.eval_temperature = ${config.eval_temperature}`);
    }
    const wanted = options.max_tokens ?? config.sampling.max_tokens;
    const request: ChatCompletionRequest = {
      model,
      messages,
      temperature: evaluating ? config.eval_temperature : (options.temperature ?? config.sampling.temperature),
      top_p: evaluating ? 1 : (options.top_p ?? config.sampling.top_p),
      max_tokens: Math.max(1, Math.min(wanted, budget)),
      n: 1,
      seed: evaluating || options.seed === undefined ? deriveSeed(config.seed, prefix, step, group, rolloutIndex, turnIndex) : options.seed,
      logprobs: true,
      return_token_ids: true,
      // The engine shares its batches fairly by run, then by rollout within the run, by this key.
      user: `${input.runId}/${id}`,
    };
    if (options.stop !== undefined) request.stop = options.stop;
    if (options.tools !== undefined && options.tools.length > 0) {
      request.tools = options.tools;
      counts.toolsOffered = true;
    }
    if (options.tool_choice !== undefined) request.tool_choice = options.tool_choice;
    // Token-exact multi-turn: when this call extends the previous one's conversation with the same tools,
    // the engine appends only the new turns to the exact tokens already seen and sampled.
    if (last && JSON.stringify(last.tools ?? null) === JSON.stringify(request.tools ?? null) && extendsConversation(messages, [...last.requestMessages, last.reply])) {
      request.continue_from = { token_ids: [...last.promptTokenIds, ...last.completionTokenIds], message_count: last.requestMessages.length + 1 };
    }

    const callSignal = signal ? AbortSignal.any([gateSignal, signal]) : gateSignal;
    let t0 = performance.now();
    const sample = () => {
      t0 = performance.now(); // model time starts with the slot: the wait for one is queued time
      return services.engine.chat(request, callSignal);
    };
    const send = () =>
      services.slots
        ? services.slots.run({ runId: input.runId, rolloutId: id, runCap: config.limits.max_run_inflight_calls, clock, signal: callSignal }, sample)
        : sample();
    let response;
    const restartsBefore = services.engineWatch?.restarts() ?? 0;
    // Left in `waiting` only when the call is cut (the rethrows on an aborted signal below).
    const call = { turn: turnIndex + 1, messages };
    waiting.add(call);
    try {
      response = await send();
    } catch (err) {
      if (gateSignal.aborted || signal?.aborted) throw err;
      let failure = err;
      // The engine died under this call (a crash, an OOM kill): once the supervisor has it back, the same
      // request is sent once more — nothing of the lost answer reached the scenario, so nothing is doubled.
      const watch = services.engineWatch;
      let restart = null;
      if (watch && isTransportFailure(err)) {
        // Waiting for the engine to come back is the runner's time, not the rollout's: its clock is paused.
        clock.enterQueue();
        restart = await restartSince(watch, restartsBefore, callSignal)
          .catch((waitErr: unknown) => {
            if (callSignal.aborted) throw waitErr;
            failure = waitErr; // the supervisor gave up on the engine: that is the cause
            return null;
          })
          .finally(() => clock.leaveQueue(false));
      }
      let cutTwice = false;
      if (restart) {
        notes.push(`turn ${turnIndex + 1}: ${restartCause(restart)}; the model call was sent again to the restarted engine`);
        try {
          response = await send();
        } catch (retryErr) {
          if (gateSignal.aborted || signal?.aborted) throw retryErr;
          failure = new Error(`${restartCause(restart)}; the model call sent again failed too: ${(retryErr as Error).message}`);
        }
      } else if (failure === err && isConnectionCut(err)) {
        // The connection was cut while the engine kept running (no restart since the call began): the same
        // request (same seed) once more. Nothing of the lost answer reached the scenario or was counted.
        notes.push(`turn ${turnIndex + 1}: the connection to the engine was cut (${(err as Error).message}) with no engine restart; the model call was sent again`);
        try {
          response = await send();
        } catch (retryErr) {
          if (gateSignal.aborted || signal?.aborted) throw retryErr;
          cutTwice = isConnectionCut(retryErr);
          failure = cutTwice
            ? new Error(`the runner lost its connection to the engine twice on this model call (no engine restart): ${(err as Error).message}; sent again: ${(retryErr as Error).message}`)
            : retryErr;
        }
      }
      if (!response) {
        waiting.delete(call);
        modelError = failure instanceof EngineError || restart || cutTwice ? (failure as Error).message : `model call failed: ${(failure as Error).message}`;
        modelErrorKind = cutTwice ? "engine_connection" : "model";
        throw Object.assign(new Error(modelError), { name: "ModelError" });
      }
    }
    waiting.delete(call);
    const modelMs = performance.now() - t0;
    const choice = response.choices[0];
    if (!choice) {
      modelError = "engine returned no choices";
      throw Object.assign(new Error(modelError), { name: "ModelError" });
    }
    const promptIds = response.prompt_token_ids ?? [];
    const completionIds = choice.token_ids ?? [];
    const toolCalls = choice.message.tool_calls ?? [];
    const malformed = choice.malformed_tool_calls ?? [];
    const reply: ChatMessage = { role: "assistant", content: choice.message.content ?? "" };
    if (toolCalls.length) reply.tool_calls = toolCalls;
    turns.push({
      promptTokenIds: promptIds,
      completionTokenIds: completionIds,
      completionLogprobs: choice.logprobs?.content ? choice.logprobs.content.map((l) => l.logprob) : null,
      completionRoles: choice.token_roles ?? null,
      modelMs,
      finishReason: choice.finish_reason,
      requestMessages: messages,
      reply,
      tools: request.tools,
    });
    const offered = new Map((request.tools ?? []).map((t) => [t.function.name, t]));
    const good = toolCalls.filter((c) => wellFormed(c, offered)).length;
    counts.toolCalls += good;
    counts.malformed += malformed.length + (toolCalls.length - good);

    const total = promptIds.length + completionIds.length;
    if (total > config.max_context_tokens) throw new ContextLimitError(`context limit: ${total} tokens > max_context_tokens ${config.max_context_tokens}`);
    recordPrompt(messages);
    transcript.push(reply);
    turnFigures.push({
      message_index: transcript.length - 1,
      prompt_tokens: promptIds.length,
      completion_tokens: completionIds.length,
      model_ms: Math.round(modelMs * 10) / 10,
      finish_reason: choice.finish_reason ?? null,
    });
    return {
      content: choice.message.content ?? "",
      finishReason: choice.finish_reason,
      toolCalls,
      malformedToolCalls: malformed,
      message: reply,
      usage: { promptTokens: response.usage.prompt_tokens, completionTokens: response.usage.completion_tokens },
    };
  };

  const host: RolloutHost = {
    chat,
    judge: (messages, options, gateSignal) => services.judge.chat(messages, options, signal ? AbortSignal.any([gateSignal, signal]) : gateSignal),
    mcpList: () => services.mcp.list(),
    mcpCall: (server, tool, args, gateSignal) => services.mcp.call(server, tool, args, signal ? AbortSignal.any([gateSignal, signal]) : gateSignal),
  };

  const result = await runRollout({
    compiled: input.compiled,
    task: input.task.data,
    split: input.split,
    step,
    group,
    rolloutIndex,
    limits: config.limits,
    host,
    mcpServers: services.mcp.servers,
    getMessages: () => transcript.map((m) => ({ ...m })),
    signal,
    clock,
    placement: input.placement,
  });

  let error: RolloutError | null = result.error;
  // Cut while waiting for the model: the prompts it waited on end the transcript, with no reply.
  if (error) {
    for (const call of waiting) {
      recordPrompt(call.messages);
      notes.push(`turn ${call.turn}: the rollout ended while this model call waited for its reply (${error.kind}); its messages end the transcript`);
    }
  }
  if (error && modelError && error.kind === "thrown") error = { ...error, kind: "model", message: modelError };
  // A call the runner could not get through to a running engine (cut, and cut again when sent once more) is
  // the runner's failure: its own kind, not the model's nor the user's (the run page counts it apart).
  if (error && modelError && modelErrorKind === "engine_connection" && error.kind === "model") error = { ...error, kind: "engine_connection", message: modelError };
  let reward: number | null = error ? null : result.reward;
  let sample: TrainSample | null = null;
  if (!error && reward !== null && turns.length > 0) {
    try {
      sample = buildTrainSample(id, reward, turns);
    } catch (err) {
      error = { kind: "model", message: (err as Error).message };
      reward = null;
    }
  }

  // The runner's own counts go last: a user metric of the same name cannot override them.
  const metrics: Record<string, number> = { ...result.metrics, turns: turns.length };
  if (counts.toolsOffered) Object.assign(metrics, { tool_calls: counts.toolCalls, malformed_tool_calls: counts.malformed });
  if (result.record.judge.calls > 0) {
    metrics.judge_tokens = result.record.judge.prompt_tokens + result.record.judge.completion_tokens;
    metrics.judge_cost_usd = result.record.judge.cost_usd;
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
    metrics,
    error,
    model,
    tokens: { prompt: promptTokens, completion: completionTokens },
    timings: { started_at: startedAt, duration_ms: result.durationMs, model_ms: turns.reduce((n, t) => n + t.modelMs, 0), queued_ms: result.queuedMs, ...cpuTimings(result.cpu) },
    logs: [...notes, ...result.logs],
    turns: turnFigures,
  };
  // Kept with the trajectory so a re-score can run an edited reward over it (a big output is left out).
  if (JSON.stringify(result.output ?? null).length <= MAX_RECORDED_OUTPUT_CHARS) trajectory.output = result.output ?? null;
  return { trajectory, sample, turns, output: result.output };
}

/** The sandbox process's CPU figures for a trajectory's timings, in whole ms (absent where not measured). */
function cpuTimings(cpu: CpuUse | null): { cpu_ms?: number; cpu_wait_ms?: number } {
  return cpu ? { cpu_ms: Math.round(cpu.cpuMs), cpu_wait_ms: Math.round(cpu.waitMs) } : {};
}
