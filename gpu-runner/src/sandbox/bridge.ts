/**
 * The runner's side of the sandbox bridge (the isolate's side is bootstrap.ts, relayed by the sandbox
 * process, worker/local-bridge.ts). A request arrives as one JSON string; it is size-checked before it is
 * parsed, validated against the contracts, counted against the rollout's budget, run through the
 * rollout's HostCallGate, and answered with an envelope `{ ok, value } | { ok: false, name, message }` as
 * JSON. The runner-side work (sampling, judging, MCP) is the caller's RolloutHost; everything the runner
 * owns about a rollout (its log, its metrics, judge tokens and cost) is recorded here, where user code
 * cannot reach it. Every cap the glue applies is applied here again: this side is the authority.
 */
import type { ChatMessage, LimitsConfig } from "../../../contracts";
import type { ChatResult, JudgeUsage, McpToolResult } from "../../../contracts/sdk/rollbook";
import type { McpServerInfo } from "../../sdk/runtime/host";
import { SANDBOX_CAPS, capText } from "./caps";
import { type ChatOptions, type JudgeOptions, type Parsed, parseChatRequest, parseJudgeRequest, parseMcpCallRequest } from "./chat-args";
import { HostCallGate } from "./host-gate";
import type { RemoteFunction } from "./worker/protocol";

export { SANDBOX_CAPS } from "./caps";

/** What the runner does for a rollout's bridge calls; each gets a signal that aborts when the rollout ends. */
export interface RolloutHost {
  chat(messages: ChatMessage[], options: ChatOptions, signal: AbortSignal): Promise<ChatResult>;
  judge(messages: ChatMessage[], options: JudgeOptions, signal: AbortSignal): Promise<{ content: string; usage: JudgeUsage }>;
  mcpList(): Promise<McpServerInfo[]>;
  mcpCall(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult>;
}

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
  return { ok: false, name, message: capText(message, SANDBOX_CAPS.maxErrorMessageChars) };
}

const refused = (p: Extract<Parsed<unknown>, { ok: false }>): Envelope => ({ ok: false, name: p.name, message: p.message });

/**
 * What user code may call now. "scenario": everything; "reward": the judge and MCP, not the policy (a
 * reward that sampled the policy would add turns to the training data); "closed": nothing.
 */
export type BridgePhase = "scenario" | "reward" | "closed";

export interface Bridge {
  record: BridgeRecord;
  /** Answer one request of the isolate: an envelope as JSON. Never rejects. */
  call(fn: RemoteFunction, json: string): Promise<string>;
  /** Log lines and metric values the sandbox process recorded (it capped them; they are capped again). */
  addRecord(logs: readonly string[], metrics: readonly (readonly [string, number])[]): void;
  /** Enter a phase: the previous phase's calls still in flight are aborted (nothing outlives its phase). */
  enter(phase: BridgePhase): void;
  release(): void;
}

export function createBridge(host: RolloutHost, limits: LimitsConfig, initial: BridgePhase = "scenario"): Bridge {
  let phase: BridgePhase = initial;
  let gate = new HostCallGate(limits.max_inflight_calls, SANDBOX_CAPS.maxQueuedCalls);
  let calls = 0;
  const closedMessage = (what: string) =>
    phase === "reward" ? `${what} cannot be called from the reward function (it would add turns to the training data)` : `${what} was called after the rollout ended`;
  // No prototype: a metric named "__proto__" or "constructor" is data like any other name.
  const record: BridgeRecord = { logs: [], metrics: Object.create(null) as Record<string, number>, judge: { prompt_tokens: 0, completion_tokens: 0, cost_usd: 0, calls: 0 } };

  const chat = async (json: string): Promise<Envelope> => {
    if (phase !== "scenario") return { ok: false, name: "Error", message: closedMessage("ctx.chat") };
    const args = parseChatRequest("ctx.chat", json, limits);
    if (!args.ok) return refused(args);
    try {
      const result = await gate.run("ctx.chat", (signal) => host.chat(args.value.messages, args.value.options, signal));
      return { ok: true, value: result };
    } catch (err) {
      return failure(err, "ModelError");
    }
  };

  const judge = async (json: string): Promise<Envelope> => {
    if (phase === "closed") return { ok: false, name: "Error", message: closedMessage("judgeChat") };
    const args = parseJudgeRequest(json, limits);
    if (!args.ok) return refused(args);
    try {
      const result = await gate.run("judgeChat", (signal) => host.judge(args.value.messages, args.value.options, signal));
      record.judge.calls++;
      record.judge.prompt_tokens += result.usage.promptTokens;
      record.judge.completion_tokens += result.usage.completionTokens;
      record.judge.cost_usd += result.usage.costUsd;
      return { ok: true, value: result };
    } catch (err) {
      return failure(err, "JudgeError");
    }
  };

  const mcpList = async (): Promise<Envelope> => {
    try {
      return { ok: true, value: await host.mcpList() };
    } catch (err) {
      return failure(err, "McpError");
    }
  };

  const mcpCall = async (json: string): Promise<Envelope> => {
    if (phase === "closed") return { ok: false, name: "Error", message: closedMessage("ctx.mcp.call") };
    const parsed = parseMcpCallRequest(json, limits);
    if (!parsed.ok) return refused(parsed);
    const { server: s, tool: t, args: a } = parsed.value;
    try {
      return { ok: true, value: await gate.run(`ctx.mcp.call("${s}", "${t}")`, (signal) => host.mcpCall(s, t, a, signal)) };
    } catch (err) {
      return failure(err, "McpError");
    }
  };

  const handlers: Record<RemoteFunction, (json: string) => Promise<Envelope>> = { chat, judge, mcpList, mcpCall };

  const call = async (fn: RemoteFunction, json: string): Promise<string> => {
    let envelope: Envelope;
    if (++calls > SANDBOX_CAPS.maxHostCalls) {
      envelope = { ok: false, name: "LimitError", message: `this rollout has already made ${SANDBOX_CAPS.maxHostCalls.toLocaleString("en")} model, judge and MCP calls (the sandbox's cap)` };
    } else {
      try {
        envelope = await handlers[fn](json);
      } catch (err) {
        envelope = failure(err, "Error");
      }
    }
    try {
      // JSON data only goes back: whatever the caller returned, the isolate gets plain data.
      return JSON.stringify(envelope.ok ? { ok: true, value: envelope.value ?? null } : envelope);
    } catch (err) {
      return JSON.stringify(failure(err, "Error"));
    }
  };

  let logDropped = false;
  const addRecord = (logs: readonly string[], metrics: readonly (readonly [string, number])[]): void => {
    const { maxLogLines, maxLogLineChars, maxMetrics, maxMetricNameChars } = SANDBOX_CAPS;
    for (const line of logs) {
      // The sandbox process capped each line already (adding a note of what it cut); this is the backstop.
      if (record.logs.length < maxLogLines) record.logs.push(capText(line, maxLogLineChars + 64));
      else if (!logDropped) {
        logDropped = true;
        record.logs.push(`(log limit of ${maxLogLines} lines reached; later lines dropped)`);
      }
    }
    for (const [name, value] of metrics) {
      if (name.length === 0 || name.length > maxMetricNameChars || !Number.isFinite(value)) continue;
      if (Object.hasOwn(record.metrics, name) || Object.keys(record.metrics).length < maxMetrics) record.metrics[name] = value;
    }
  };

  return {
    record,
    call,
    addRecord,
    enter: (next) => {
      gate.close(next === "reward" ? "the scenario has returned" : "the rollout has ended");
      phase = next;
      if (next !== "closed") gate = new HostCallGate(limits.max_inflight_calls, SANDBOX_CAPS.maxQueuedCalls);
    },
    release: () => {
      gate.close();
      phase = "closed";
    },
  };
}
