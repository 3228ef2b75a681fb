/**
 * The messages between the runner and a sandbox process (Node IPC, JSON). The runner drives: it opens a
 * sandbox for one experiment bundle, calls its entry points one at a time, answers its bridge calls, and
 * closes it. The process answers each open and call with `opened`, `returned` or `failed`, forwards the
 * isolate's model/judge/MCP calls as `host` requests, and streams what ctx.log and ctx.metric recorded.
 * Types only: the sandbox process trusts the runner; the runner validates every message it receives
 * (remote.ts), as the process runs hostile code beside its own.
 */
import type { LimitsConfig } from "../../../../contracts";

export const ENTRY_FUNCTIONS = ["describe", "checkTasks", "runScenario", "runReward", "runGroupReward"] as const;
export type EntryFunction = (typeof ENTRY_FUNCTIONS)[number];

/** The bridge functions the runner serves; log and metric are kept in the sandbox process and streamed. */
export const REMOTE_FUNCTIONS = ["chat", "judge", "mcpList", "mcpCall"] as const;
export type RemoteFunction = (typeof REMOTE_FUNCTIONS)[number];

export const STOP_REASONS = ["wall", "cpu", "abort", "memory"] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export interface ErrorInfo {
  name: string;
  message: string;
  stack?: string;
}

export type ToSandbox =
  /** Open a sandbox for a bundle; `js` is null when this process already holds the bundle of `hash`. */
  | { t: "open"; sid: number; hash: string; js: string | null; limits: LimitsConfig }
  /** `cpuMs` replaces limits.cpu_timeout_ms for this call (checking a big task file at start). */
  | { t: "call"; sid: number; fn: EntryFunction; args: unknown[]; cpuMs?: number }
  /** The answer to a `host` request: an envelope as JSON. */
  | { t: "reply"; sid: number; id: number; envelope: string }
  /** The rollout's clock: paused while it only waits for a slot on the shared engine (rollout-clock.ts). */
  | { t: "clock"; sid: number; paused: boolean }
  | { t: "abort"; sid: number }
  | { t: "close"; sid: number };

export type FromSandbox =
  | { t: "ready" }
  | { t: "opened"; sid: number }
  | { t: "returned"; sid: number; value: unknown }
  /** An open or a call failed: user code threw (stop null), or a limit stopped the isolate. */
  | { t: "failed"; sid: number; error: ErrorInfo; stop: StopReason | null }
  | { t: "host"; sid: number; id: number; fn: RemoteFunction; json: string }
  /** Log lines and metric values recorded since the last record message. */
  | { t: "record"; sid: number; logs: string[]; metrics: [string, number][] };
