/**
 * The host side of the sandbox bridge (see bootstrap.ts): one ivm.Reference per bridge function, each of
 * which validates the isolate's arguments against the contracts, applies the caps, goes through the
 * rollout's HostCallGate, and answers with an envelope `{ ok, value } | { ok: false, name, message }` of
 * plain data. The runner-side work (sampling, judging, MCP) is the caller's RolloutHost; everything the
 * runner owns about a rollout (its log, its metrics, judge tokens and cost) is recorded here, host-side,
 * where user code cannot reach it.
 */
import ivm from "isolated-vm";
import type { ChatMessage, LimitsConfig } from "../../contracts";
import type { ChatResult, JudgeUsage, McpToolResult } from "../../sdk/rollbook";
import type { McpServerInfo } from "../../sdk/runtime/host";
import { type BridgeFunction } from "./bootstrap";
import { type ChatOptions, type JudgeOptions, parseChatArgs, parseJudgeArgs, parseMcpCallArgs } from "./chat-args";
import { HostCallGate, LimitError } from "./host-gate";

/** What the runner does for a rollout's bridge calls; each gets a signal that aborts when the rollout ends. */
export interface RolloutHost {
  chat(messages: ChatMessage[], options: ChatOptions, signal: AbortSignal): Promise<ChatResult>;
  judge(messages: ChatMessage[], options: JudgeOptions, signal: AbortSignal): Promise<{ content: string; usage: JudgeUsage }>;
  mcpList(): Promise<McpServerInfo[]>;
  mcpCall(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult>;
}

/** Per-rollout caps on what the log and metrics can hold, so a chatty scenario cannot flood the event log. */
export const SANDBOX_CAPS = {
  maxLogLines: 200,
  maxLogLineChars: 2_000,
  maxMetrics: 64,
  maxMetricNameChars: 100,
} as const;

export interface BridgeRecord {
  logs: string[];
  /** ctx.metric values (user-owned). */
  metrics: Record<string, number>;
  /** Judge usage, counted here: the user cannot forge it. */
  judge: { prompt_tokens: number; completion_tokens: number; cost_usd: number; calls: number };
}

type Envelope = { ok: true; value: unknown } | { ok: false; name: string; message: string };

/** Errors whose name the sandbox keeps; any other failure of a bridge function gets the function's own name. */
const KEPT_NAMES = new Set(["TypeError", "LimitError", "ContextLimitError", "ModelError", "McpError", "ToolError", "JudgeError"]);

function failure(err: unknown, fallbackName: string): Envelope {
  const name = err instanceof Error && KEPT_NAMES.has(err.name) ? err.name : fallbackName;
  const message = err instanceof Error ? err.message : String(err);
  return { ok: false, name, message };
}

/** Copy of a host value as plain JSON data: whatever the caller returned, the isolate gets data only. */
const plain = (value: unknown): unknown => (value === undefined ? null : (JSON.parse(JSON.stringify(value)) as unknown));

/**
 * What user code may call now. "scenario": everything; "reward": the judge and MCP, not the policy (a
 * reward that sampled the policy would add turns to the training data); "closed": nothing.
 */
export type BridgePhase = "scenario" | "reward" | "closed";

export interface Bridge {
  refs: Record<BridgeFunction, ivm.Reference>;
  record: BridgeRecord;
  /** Enter a phase: the previous phase's calls still in flight are aborted (nothing outlives its phase). */
  enter(phase: BridgePhase): void;
  release(): void;
}

/** A gate per phase, each bounding calls in flight to limits.max_inflight_calls. */
const MAX_QUEUED = 64;

export function createBridge(host: RolloutHost, limits: LimitsConfig, initial: BridgePhase = "scenario"): Bridge {
  let phase: BridgePhase = initial;
  let gate = new HostCallGate(limits.max_inflight_calls, MAX_QUEUED);
  const closedMessage = (what: string) =>
    phase === "reward" ? `${what} cannot be called from the reward function (it would add turns to the training data)` : `${what} was called after the rollout ended`;
  const record: BridgeRecord = { logs: [], metrics: {}, judge: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, calls: 0 } };
  let logDropped = false;

  const chat = async (messages: unknown, options: unknown): Promise<Envelope> => {
    if (phase !== "scenario") return { ok: false, name: "Error", message: closedMessage("ctx.chat") };
    const args = parseChatArgs("ctx.chat", messages, options, limits);
    if (!args.ok) return { ok: false, name: "TypeError", message: args.message };
    try {
      const result = await gate.run("ctx.chat", (signal) => host.chat(args.value.messages, args.value.options, signal));
      return { ok: true, value: plain(result) };
    } catch (err) {
      return failure(err, "ModelError");
    }
  };

  const judge = async (messages: unknown, options: unknown): Promise<Envelope> => {
    if (phase === "closed") return { ok: false, name: "Error", message: closedMessage("judgeChat") };
    const args = parseJudgeArgs(messages, options, limits);
    if (!args.ok) return { ok: false, name: "TypeError", message: args.message };
    try {
      const result = await gate.run("judgeChat", (signal) => host.judge(args.value.messages, args.value.options, signal));
      record.judge.calls++;
      record.judge.prompt_tokens += result.usage.promptTokens;
      record.judge.completion_tokens += result.usage.completionTokens;
      record.judge.cost_usd += result.usage.costUsd;
      return { ok: true, value: plain(result) };
    } catch (err) {
      return failure(err, "JudgeError");
    }
  };

  const mcpList = async (): Promise<Envelope> => {
    try {
      return { ok: true, value: plain(await host.mcpList()) };
    } catch (err) {
      return failure(err, "McpError");
    }
  };

  const mcpCall = async (server: unknown, tool: unknown, args: unknown): Promise<Envelope> => {
    if (phase === "closed") return { ok: false, name: "Error", message: closedMessage("ctx.mcp.call") };
    const parsed = parseMcpCallArgs(server, tool, args, limits);
    if (!parsed.ok) return { ok: false, name: "TypeError", message: parsed.message };
    const { server: s, tool: t, args: a } = parsed.value;
    try {
      return { ok: true, value: plain(await gate.run(`ctx.mcp.call("${s}", "${t}")`, (signal) => host.mcpCall(s, t, a, signal))) };
    } catch (err) {
      return failure(err, "McpError");
    }
  };

  const log = (line: unknown): void => {
    if (typeof line !== "string") return;
    if (record.logs.length >= SANDBOX_CAPS.maxLogLines) {
      if (!logDropped) record.logs.push(`(log limit of ${SANDBOX_CAPS.maxLogLines} lines reached; later lines dropped)`);
      logDropped = true;
      return;
    }
    const max = SANDBOX_CAPS.maxLogLineChars;
    record.logs.push(line.length > max ? `${line.slice(0, max)}… (${line.length - max} more characters)` : line);
  };

  const metric = (name: unknown, value: unknown): void => {
    // The SDK runtime checks these and throws a TypeError in user code; this guards the host all the same.
    if (typeof name !== "string" || name.length === 0 || name.length > SANDBOX_CAPS.maxMetricNameChars) return;
    if (typeof value !== "number" || !Number.isFinite(value)) return;
    if (name in record.metrics || Object.keys(record.metrics).length < SANDBOX_CAPS.maxMetrics) record.metrics[name] = value;
    else throw new LimitError(`ctx.metric: at most ${SANDBOX_CAPS.maxMetrics} metric names per rollout`);
  };

  const fns: Record<BridgeFunction, (...args: never[]) => unknown> = { chat, judge, mcpList, mcpCall, log, metric };
  const refs = Object.fromEntries(Object.entries(fns).map(([k, fn]) => [k, new ivm.Reference(fn)])) as Record<BridgeFunction, ivm.Reference>;
  return {
    refs,
    record,
    enter: (next) => {
      gate.close(next === "reward" ? "the scenario has returned" : "the rollout has ended");
      phase = next;
      if (next !== "closed") gate = new HostCallGate(limits.max_inflight_calls, MAX_QUEUED);
    },
    release: () => {
      gate.close();
      for (const ref of Object.values(refs)) ref.release();
    },
  };
}
