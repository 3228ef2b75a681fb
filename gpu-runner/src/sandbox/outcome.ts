/**
 * Turning what comes back from the isolate into RolloutErrors: results are validated as data from an
 * untrusted place, stacks are mapped to the user's files, and stops (wall clock, CPU, memory, abort) are
 * worded with the limit that caused them.
 */
import { z } from "zod";
import type { LimitsConfig, RolloutError } from "../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import { BOOTSTRAP_FILENAME } from "./bootstrap";
import { BUNDLE_FILENAME } from "./isolate";
import { type DecodedMap, decodeInlineSourceMap, mapStack } from "./source-map";
import { StopError, type StopReason } from "./watchdog";

export const anyNumber = z.custom<number>((v) => typeof v === "number"); // NaN and ±Infinity included: checkReward explains them
export const Failure = z.object({ ok: z.literal(false), name: z.string(), message: z.string(), stack: z.string().optional() });
export type Failure = z.infer<typeof Failure>;
export const MetricEntries = z.array(z.tuple([z.string(), anyNumber.nullable(), z.string()]));

/** Cached decoded source maps per compiled experiment (the same bundle runs thousands of times). */
const sourceMaps = new WeakMap<CompiledExperiment, DecodedMap | null>();
function mapFor(compiled: CompiledExperiment): DecodedMap | null {
  if (!sourceMaps.has(compiled)) sourceMaps.set(compiled, decodeInlineSourceMap(compiled.js));
  return sourceMaps.get(compiled) ?? null;
}

/** Frames of the sandbox's own plumbing mean nothing to a user. */
const HIDDEN_FRAMES = [BOOTSTRAP_FILENAME, "rollbook/entry.ts"];

export function userStack(compiled: CompiledExperiment, stack: string | undefined): string | undefined {
  if (!stack) return undefined;
  // Host frames after isolated-vm's boundary marker are the runner's, not the user's.
  const inIsolate = stack.split("\n    at (<isolated-vm boundary>)")[0] ?? stack;
  return mapStack(inIsolate, { [BUNDLE_FILENAME]: mapFor(compiled) }, HIDDEN_FRAMES);
}

export function errorText(name: string, message: string): string {
  return name === "Error" || name === "" ? message : `${name}: ${message}`;
}

const KIND_BY_NAME: Record<string, RolloutError["kind"]> = {
  ModelError: "model",
  McpError: "mcp",
  LimitError: "limit",
  ContextLimitError: "limit",
};

/** A failure the user's code reported (it threw, or the glue refused its result). */
export function thrown(compiled: CompiledExperiment, f: Failure, where: "scenario" | "reward"): RolloutError {
  const stack = userStack(compiled, f.stack);
  if (where === "reward") {
    return { kind: "reward", message: `the reward function threw: ${errorText(f.name, f.message)}`, ...(stack ? { stack } : {}) };
  }
  return { kind: KIND_BY_NAME[f.name] ?? "thrown", message: errorText(f.name, f.message), ...(stack ? { stack } : {}) };
}

export function stopError(reason: StopReason, limits: LimitsConfig): RolloutError {
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

/** A rejection from a call into the isolate that the glue did not catch (limits, or top-level code threw). */
export function classify(err: unknown, reason: StopReason | null, isolateDisposed: boolean, compiled: CompiledExperiment, limits: LimitsConfig): RolloutError {
  if (err instanceof StopError) return stopError(err.reason, limits);
  if (reason) return stopError(reason, limits);
  const message = err instanceof Error ? err.message : String(err);
  if (/memory limit/i.test(message) || isolateDisposed) return stopError("memory", limits);
  if (/execution timed out/i.test(message)) return stopError("cpu", limits);
  const name = err instanceof Error ? err.name : "Error";
  const stack = userStack(compiled, err instanceof Error ? err.stack : undefined);
  return { kind: "thrown", message: errorText(name, message), ...(stack ? { stack } : {}) };
}
