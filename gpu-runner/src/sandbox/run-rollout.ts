/**
 * Runs one rollout of user code: the scenario's default export, then the reward's, in a fresh V8 isolate
 * (isolated-vm) with no Node APIs: no require, no process, no fs, no network, no timers. The only way out
 * is `ctx`: chat (an async host call, validated here), log and metric. Every rollout gets its own isolate,
 * so one rollout's crash, hang or memory bomb cannot touch another or the host process.
 *
 * The host process must run Node with `--no-node-snapshot` (isolated-vm's requirement on Node ≥ 20;
 * vitest.config.ts passes it to the forks pool, and the runner's start script passes it to node).
 */
import ivm from "isolated-vm";
import { z } from "zod";
import type { ChatMessage, LimitsConfig, RolloutError, ToolCall } from "../../contracts";
import { type CompiledExperiment, REWARD_GLOBAL, SCENARIO_GLOBAL } from "../experiment/compile";
import { BOOTSTRAP_FILENAME, SANDBOX_CAPS, bootstrapSource } from "./bootstrap";
import { type ChatOptions, parseChatArgs } from "./chat-args";
import { type DecodedMap, decodeInlineSourceMap, mapStack } from "./source-map";
import { StopError, Watchdog } from "./watchdog";

export type { ChatOptions } from "./chat-args";

export interface SandboxChatResult {
  content: string;
  finishReason: "stop" | "length" | "tool_calls" | null;
  toolCalls: ToolCall[];
  message: ChatMessage;
}

export interface RolloutInput {
  compiled: CompiledExperiment;
  task: unknown;
  split: "train" | "val";
  step: number;
  rolloutIndex: number;
  limits: LimitsConfig;
  /** The model, as the caller provides it. The caller records every turn (it owns the trajectory). */
  chat: (messages: ChatMessage[], options: ChatOptions) => Promise<SandboxChatResult>;
  /** The conversation the caller recorded, handed to the reward function as `messages`. */
  getMessages: () => ChatMessage[];
  signal?: AbortSignal;
}

export interface RolloutOutcome {
  /** What the scenario returned (JSON data; null when it returned nothing or failed). */
  output: unknown;
  /** null when the rollout failed (error set). */
  reward: number | null;
  /** ctx.metric values, then the reward's metrics (which win on a name clash). */
  metrics: Record<string, number>;
  logs: string[];
  error: RolloutError | null;
  durationMs: number;
}

/** Largest scenario output kept (serialised JSON characters); the trajectory is stored and streamed. */
export const MAX_OUTPUT_CHARS = 1_000_000;

const SCENARIO_FILE = "scenario.js";
const REWARD_FILE = "reward.js";

// --- what the glue returns (bootstrap.ts builds these; they are still checked, as data from an isolate)
const anyNumber = z.custom<number>((v) => typeof v === "number"); // NaN and ±Infinity included: checkReward explains them
const Failure = z.object({ ok: z.literal(false), name: z.string(), message: z.string(), stack: z.string().optional() });
const ScenarioResult = z.union([z.object({ ok: z.literal(true), outputJson: z.string() }), Failure]);
const RewardResult = z.union([
  z.object({
    ok: z.literal(true),
    type: z.string(),
    rewardType: z.string().optional(),
    reward: anyNumber.nullable(),
    metricsType: z.string().optional(),
    metrics: z.array(z.tuple([z.string(), anyNumber.nullable(), z.string()])),
  }),
  Failure,
]);
type Failure = z.infer<typeof Failure>;
type RewardResult = Extract<z.infer<typeof RewardResult>, { ok: true }>;

/** Cached decoded source maps per compiled experiment (the same bundles run thousands of times). */
const sourceMaps = new WeakMap<CompiledExperiment, Record<string, DecodedMap | null>>();
function mapsFor(compiled: CompiledExperiment): Record<string, DecodedMap | null> {
  let maps = sourceMaps.get(compiled);
  if (!maps) {
    maps = { [SCENARIO_FILE]: decodeInlineSourceMap(compiled.scenarioJs), [REWARD_FILE]: decodeInlineSourceMap(compiled.rewardJs) };
    sourceMaps.set(compiled, maps);
  }
  return maps;
}

function userStack(compiled: CompiledExperiment, stack: string | undefined): string | undefined {
  if (!stack) return undefined;
  // Host frames after isolated-vm's boundary marker are the runner's, not the user's.
  const inIsolate = stack.split("\n    at (<isolated-vm boundary>)")[0] ?? stack;
  return mapStack(inIsolate, mapsFor(compiled), [BOOTSTRAP_FILENAME]);
}

function errorText(name: string, message: string): string {
  return name === "Error" || name === "" ? message : `${name}: ${message}`;
}

function thrown(compiled: CompiledExperiment, f: Failure, where: "scenario" | "reward"): RolloutError {
  const stack = userStack(compiled, f.stack);
  if (where === "reward") {
    return { kind: "reward", message: `the reward function threw: ${errorText(f.name, f.message)}`, ...(stack ? { stack } : {}) };
  }
  const kind = f.name === "ModelError" ? "model" : "thrown";
  return { kind, message: errorText(f.name, f.message), ...(stack ? { stack } : {}) };
}

function stopError(reason: StopError["reason"], limits: LimitsConfig): RolloutError {
  switch (reason) {
    case "wall":
      return { kind: "timeout", message: `wall-clock timeout: the rollout took longer than ${limits.rollout_timeout_ms} ms (limits.rollout_timeout_ms)` };
    case "cpu":
      return { kind: "timeout", message: `CPU timeout: user code ran for more than ${limits.cpu_timeout_ms} ms of CPU time in one call (limits.cpu_timeout_ms)` };
    case "abort":
      return { kind: "timeout", message: "aborted: the run was stopped before this rollout finished" };
    case "memory":
      return { kind: "memory", message: `out of memory: the rollout exceeded its heap limit of ${limits.memory_mb} MB (limits.memory_mb)` };
  }
}

/** A rejection from a call into the isolate that the glue did not catch. */
function classify(err: unknown, watchdog: Watchdog, isolate: ivm.Isolate, input: RolloutInput): RolloutError {
  if (err instanceof StopError) return stopError(err.reason, input.limits);
  if (watchdog.reason) return stopError(watchdog.reason, input.limits);
  const message = err instanceof Error ? err.message : String(err);
  if (/memory limit/i.test(message) || isolate.isDisposed) return stopError("memory", input.limits);
  if (/execution timed out/i.test(message)) return stopError("cpu", input.limits);
  // Top-level code of a bundle threw while loading (e.g. `throw` outside any function).
  const name = err instanceof Error ? err.name : "Error";
  const stack = userStack(input.compiled, err instanceof Error ? err.stack : undefined);
  return { kind: "thrown", message: errorText(name, message), ...(stack ? { stack } : {}) };
}

function checkReward(r: RewardResult): { reward: number; metrics: [string, number][] } | string {
  const describe = (v: number) => (Number.isNaN(v) ? "NaN" : String(v));
  let reward: number;
  if (r.type === "number") reward = r.reward ?? Number.NaN;
  else if (r.type === "object") {
    if (r.rewardType !== "number" || r.reward === null) return `the reward function returned { reward: ${r.rewardType} }; reward must be a finite number`;
    reward = r.reward;
  } else return `the reward function returned ${r.type === "null" ? "null" : `a ${r.type}`}; return a finite number or { reward, metrics }`;
  if (!Number.isFinite(reward)) return `the reward function returned ${describe(reward)}; the reward must be a finite number`;

  if (r.metricsType !== undefined && r.metricsType !== "undefined" && r.metricsType !== "object") {
    return `the reward function returned metrics as ${r.metricsType}; metrics must be an object of finite numbers`;
  }
  const metrics: [string, number][] = [];
  for (const [name, value, type] of r.metrics) {
    if (value === null || !Number.isFinite(value)) {
      return `the reward function returned metrics.${name} = ${value === null ? type : describe(value)}; metrics must be finite numbers`;
    }
    metrics.push([name, value]);
  }
  return { reward, metrics };
}

export async function runRollout(input: RolloutInput): Promise<RolloutOutcome> {
  const started = performance.now();
  const logs: string[] = [];
  const metrics: Record<string, number> = {};
  let output: unknown = null;
  const outcome = (error: RolloutError | null, reward: number | null = null): RolloutOutcome => ({
    output,
    reward: error ? null : reward,
    metrics,
    logs,
    error,
    durationMs: Math.round(performance.now() - started),
  });
  if (input.signal?.aborted) return outcome(stopError("abort", input.limits));

  const { limits, compiled } = input;
  const isolate = new ivm.Isolate({ memoryLimit: limits.memory_mb });
  const watchdog = new Watchdog(isolate, limits, input.signal);
  /** After the scenario returns, late ctx.chat calls (not awaited by the scenario) are refused. */
  let chatOpen = true;

  const chatRef = new ivm.Reference(async (messages: unknown, options: unknown) => {
    if (!chatOpen) return { ok: false, name: "Error", message: "ctx.chat was called after the scenario returned" };
    const args = parseChatArgs(messages, options);
    if (!args.ok) return { ok: false, name: "TypeError", message: args.message };
    try {
      const r = await input.chat(args.messages, args.options);
      // Plain data only: whatever the caller's result object carries, the isolate gets JSON.
      const value = JSON.parse(JSON.stringify({ content: r.content, finishReason: r.finishReason, toolCalls: r.toolCalls, message: r.message })) as unknown;
      return { ok: true, value };
    } catch (err) {
      // A TypeError/RangeError from the caller means the request itself was refused (the user's fault,
      // catchable like any bad argument); anything else is the model failing (RolloutError kind "model").
      if (err instanceof TypeError || err instanceof RangeError) return { ok: false, name: "TypeError", message: err.message };
      return { ok: false, name: "ModelError", message: `model call failed: ${err instanceof Error ? err.message : String(err)}` };
    }
  });
  const logRef = new ivm.Reference((line: unknown) => {
    // The glue already caps lines; this guards the host against a tampered glue all the same.
    // (+1: the glue's own "log limit reached" line.)
    if (typeof line === "string" && logs.length <= SANDBOX_CAPS.maxLogLines) {
      logs.push(line.slice(0, SANDBOX_CAPS.maxLogLineChars + 100));
    }
  });
  const metricRef = new ivm.Reference((name: unknown, value: unknown) => {
    if (typeof name === "string" && typeof value === "number" && Number.isFinite(value)) {
      if (name in metrics || Object.keys(metrics).length < SANDBOX_CAPS.maxMetrics) metrics[name] = value;
    }
  });

  let context: ivm.Context | undefined;
  try {
    context = await watchdog.guard(isolate.createContext());
    const jail = context.global;
    await jail.set("globalThis", jail.derefInto());
    await jail.set("__rollbook_chat", chatRef);
    await jail.set("__rollbook_log", logRef);
    await jail.set("__rollbook_metric", metricRef);

    const cpu = { timeout: limits.cpu_timeout_ms };
    const load = async (code: string, filename: string) => {
      const script = await watchdog.guard(isolate.compileScript(code, { filename }));
      try {
        await watchdog.guard(script.run(context!, cpu));
      } finally {
        script.release();
      }
    };
    watchdog.startPhase();
    await load(bootstrapSource({ scenario: SCENARIO_GLOBAL, reward: REWARD_GLOBAL }), BOOTSTRAP_FILENAME);
    // Take the entry points before user code loads, then remove them from the global scope.
    const runScenario = await watchdog.guard(jail.get("__rollbook_run_scenario", { reference: true }));
    const runReward = await watchdog.guard(jail.get("__rollbook_run_reward", { reference: true }));
    await jail.delete("__rollbook_run_scenario");
    await jail.delete("__rollbook_run_reward");
    await load(compiled.scenarioJs, SCENARIO_FILE);
    await load(compiled.rewardJs, REWARD_FILE);

    // --- scenario
    const taskJson = JSON.stringify(input.task ?? null);
    watchdog.startPhase();
    const scenarioRaw: unknown = await watchdog.guard(
      runScenario.apply(undefined, [taskJson, input.split, input.step, input.rolloutIndex], {
        ...cpu,
        result: { promise: true, copy: true },
      }),
    );
    chatOpen = false;
    const scenario = ScenarioResult.parse(scenarioRaw);
    if (!scenario.ok) return outcome(thrown(compiled, scenario, "scenario"));
    if (scenario.outputJson.length > MAX_OUTPUT_CHARS) {
      return outcome({ kind: "thrown", message: `the scenario's output is ${scenario.outputJson.length} characters of JSON; the limit is ${MAX_OUTPUT_CHARS}` });
    }
    output = JSON.parse(scenario.outputJson) as unknown;

    // --- reward
    const messagesJson = JSON.stringify(input.getMessages());
    watchdog.startPhase();
    const rewardRaw: unknown = await watchdog.guard(
      runReward.apply(undefined, [taskJson, messagesJson], { ...cpu, result: { promise: true, copy: true } }),
    );
    const reward = RewardResult.parse(rewardRaw);
    if (!reward.ok) return outcome(thrown(compiled, reward, "reward"));
    const checked = checkReward(reward);
    if (typeof checked === "string") return outcome({ kind: "reward", message: checked });
    for (const [name, value] of checked.metrics) metrics[name] = value;
    return outcome(null, checked.reward);
  } catch (err) {
    return outcome(classify(err, watchdog, isolate, input));
  } finally {
    chatOpen = false;
    watchdog.dispose();
    try {
      context?.release();
    } catch {
      // already gone with its isolate
    }
    if (!isolate.isDisposed) isolate.dispose();
    chatRef.release();
    logRef.release();
    metricRef.release();
  }
}
