/**
 * The bridge to the runner, from inside the sandbox. The sandbox's glue (gpu-runner/src/sandbox/bootstrap.ts)
 * installs `globalThis.__rollbook_host` before any user code loads: a frozen object of functions that cross
 * the isolate boundary with copied, plain data and answer with an envelope `{ ok, value }` or
 * `{ ok: false, name, message }`. The runner validates every argument itself and owns everything that
 * matters (sampled tokens, token counts, limits), so user code that calls the bridge directly gains nothing
 * over the SDK.
 */
import type { ChatMessage, ChatResult, JudgeUsage, McpToolResult, ToolSpec } from "../../../contracts/sdk/rollbook";

export type Envelope<T> = { ok: true; value: T } | { ok: false; name: string; message: string };

export interface McpServerInfo {
  name: string;
  ok: boolean;
  /** Why the server is unavailable. */
  error?: string;
  tools: ToolSpec[];
}

/** What the runner offers; argument shapes are checked again on the runner's side. */
export interface HostBridge {
  chat(messages: ChatMessage[], options: Record<string, unknown>): Promise<Envelope<ChatResult>>;
  judge(messages: ChatMessage[], options: Record<string, unknown>): Promise<Envelope<{ content: string; usage: JudgeUsage }>>;
  mcpList(): Promise<Envelope<McpServerInfo[]>>;
  mcpCall(server: string, tool: string, args: Record<string, unknown>): Promise<Envelope<McpToolResult>>;
  log(line: string): void;
  metric(name: string, value: number): void;
}

export const HOST_GLOBAL = "__rollbook_host";

export function host(): HostBridge {
  const bridge = (globalThis as Record<string, unknown>)[HOST_GLOBAL] as HostBridge | undefined;
  if (!bridge) throw new Error("the Rollbook SDK works only inside a rollout (the runner provides it)");
  return bridge;
}

/** An error the runner reported, with the name it gave (ModelError, McpError, JudgeError, LimitError…). */
export class HostError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/** Unwraps an envelope: the value, or the runner's error thrown as an Error with its name. */
export async function unwrap<T>(pending: Promise<Envelope<T>>): Promise<T> {
  const r = await pending;
  if (r.ok) return r.value;
  if (r.name === "TypeError") throw new TypeError(r.message);
  throw new HostError(r.name, r.message);
}
