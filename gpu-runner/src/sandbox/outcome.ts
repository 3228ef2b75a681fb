/**
 * Turning what comes back from the isolate into RolloutErrors: results are validated as data from an
 * untrusted place, texts the user's code chose are capped, stacks are mapped to the user's files, and stops
 * (wall clock, CPU, memory, abort) and sandbox-process deaths are worded with the limit that caused them.
 */
import { z } from "zod";
import type { LimitsConfig, RolloutError } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import { BOOTSTRAP_FILENAME } from "./bootstrap";
import { SANDBOX_CAPS, capText } from "./caps";
import { type SandboxExit, addressSpaceMb } from "./pool";
import { SandboxFailure } from "./remote";
import { type DecodedMap, decodeInlineSourceMap, mapStack } from "./source-map";
import type { StopReason } from "./worker/protocol";
import { ABSOLUTE_LIMIT_FACTOR, type RolloutClock, seconds } from "./rollout-clock";
import type { CpuUse } from "./cpu/cpu-meter";
import { starvation, starvedError } from "./cpu/starvation";

/** The bundle's file name inside the isolate (isolate.ts), as it appears in stacks. */
const BUNDLE_FILENAME = "experiment.js";

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
  // Host frames after isolated-vm's boundary marker are the sandbox process's, not the user's.
  // The sandbox process capped it already (with a note); this bound only guards against a process that did not.
  const inIsolate = stack.slice(0, SANDBOX_CAPS.maxStackChars + 100).split("\n    at (<isolated-vm boundary>)")[0] ?? stack;
  return mapStack(inIsolate, { [BUNDLE_FILENAME]: mapFor(compiled) }, HIDDEN_FRAMES);
}

/** An error's text for a RolloutError: the user's code chose it, so it is capped. */
export function errorText(name: string, message: string): string {
  // Capped in the sandbox process already (with a note); the extra room keeps that note intact.
  const n = capText(name, 300);
  const m = capText(message, SANDBOX_CAPS.maxErrorMessageChars + 100);
  return n === "Error" || n === "" ? m : `${n}: ${m}`;
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

/**
 * A wall-clock stop, with how long the rollout ran and how long it waited for an engine slot: a crowded
 * engine must not read as the user's bug. Past ABSOLUTE_LIMIT_FACTOR × the limit of real time it was the
 * backstop that stopped it, not its own time.
 */
function wallMessage(limits: LimitsConfig, clock: RolloutClock): string {
  const limit = limits.rollout_timeout_ms;
  const figures = `ran ${seconds(clock.runningMs())} (code and model), waited ${seconds(clock.queuedMs())} for an engine slot`;
  if (clock.elapsedMs() >= ABSOLUTE_LIMIT_FACTOR * limit) {
    return `wall-clock timeout: stopped after ${seconds(clock.elapsedMs())} of real time (${ABSOLUTE_LIMIT_FACTOR}× limits.rollout_timeout_ms of ${seconds(limit)}, the bound on time spent waiting for the engine): ${figures}`;
  }
  return `wall-clock timeout: limit of ${seconds(limit)} reached (limits.rollout_timeout_ms): ${figures}`;
}

/**
 * What a stop means for the rollout. A wall-clock stop of a rollout that the runner's busy CPUs starved
 * (cpu: what its process got and was denied, read as it stopped; cpu/starvation.ts) is `starved`, not its
 * code's `timeout`.
 */
export function stopError(reason: StopReason, limits: LimitsConfig, clock?: RolloutClock, cpu?: CpuUse | null): RolloutError {
  switch (reason) {
    case "wall": {
      if (!clock) return { kind: "timeout", message: `wall-clock timeout: the rollout took longer than ${limits.rollout_timeout_ms} ms (limits.rollout_timeout_ms)` };
      // Stopped by the bound on real time, its own time never reached the limit: it waited for engine slots.
      const backstop = clock.elapsedMs() >= ABSOLUTE_LIMIT_FACTOR * limits.rollout_timeout_ms;
      const starved = backstop ? null : starvation(cpu, clock);
      return starved ? starvedError(limits, clock, starved) : { kind: "timeout", message: wallMessage(limits, clock) };
    }
    case "cpu":
      return { kind: "timeout", message: `CPU timeout: user code ran for more than ${limits.cpu_timeout_ms} ms of CPU time in one call (limits.cpu_timeout_ms)` };
    case "abort":
      return { kind: "timeout", message: "aborted: the run was stopped before this rollout finished" };
    case "memory":
      return { kind: "memory", message: `out of memory: the rollout exceeded its heap limit of ${limits.memory_mb} MB (limits.memory_mb)` };
  }
}

/** What V8 or the system wrote when it ended a sandbox process, as a reason a user can act on. */
const FATAL_PATTERNS: [RegExp, string][] = [
  [/Fatal JavaScript invalid size error[^\n]*/, "a value past V8's size limits"],
  [/catastrophic isolate error[^\n]*|Catastrophic out-of-memory[^\n]*/i, "V8 ran out of memory"],
  [/(?:Fatal process out of memory|JavaScript heap out of memory|Allocation failed|Failed to reserve virtual memory)[^\n]*/i, "V8 ran out of memory"],
];

/** A sandbox process that died under a rollout: V8 ended it (it says why on stderr) or something killed it. */
export function crashError(exit: SandboxExit, limits: LimitsConfig): RolloutError {
  const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
  for (const [pattern, what] of FATAL_PATTERNS) {
    const said = pattern.exec(exit.stderr)?.[0]?.trim();
    if (said) {
      return {
        kind: "memory",
        message:
          `out of memory: V8 ended the sandbox process running this rollout (${what}: "${capText(said, 200)}"); ` +
          `the rollout's heap limit is ${limits.memory_mb} MB (limits.memory_mb) and its process may reserve ${addressSpaceMb(limits.memory_mb)} MB`,
      };
    }
  }
  if (exit.signal === "SIGKILL") {
    return { kind: "memory", message: `out of memory: the sandbox process running this rollout was killed (${how}), most likely by the system's out-of-memory killer; limits.memory_mb is ${limits.memory_mb}` };
  }
  const said = exit.stderr.trim().split("\n").slice(-3).join(" | ");
  return { kind: "thrown", message: `the sandbox process running this rollout exited unexpectedly (${how})${said ? `: ${capText(said, 500)}` : ""}` };
}

/** A call into the sandbox that failed: top-level code threw, a limit stopped it, or its process died. */
export function classify(err: unknown, compiled: CompiledExperiment, limits: LimitsConfig, clock?: RolloutClock): RolloutError {
  if (err instanceof SandboxFailure) {
    const end = err.end;
    if (end.type === "stop") return stopError(end.reason, limits, clock, end.cpu);
    if (end.type === "crash") return crashError(end.exit, limits);
    const stack = userStack(compiled, end.error.stack);
    return { kind: KIND_BY_NAME[end.error.name] ?? "thrown", message: errorText(end.error.name, end.error.message), ...(stack ? { stack } : {}) };
  }
  // Not from the sandbox: a result of the SDK's entry points that failed validation here. The SDK builds
  // those results, so user code got in its way (a replaced builtin, a Proxy where data was expected).
  if (err instanceof z.ZodError) {
    const issue = err.issues[0];
    const where = issue ? `${issue.path.join(".") || "(result)"}: ${issue.message}` : "";
    return { kind: "thrown", message: `the sandbox returned a result the runner cannot read (did the code replace a builtin the SDK uses?): ${capText(where, 300)}` };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { kind: "thrown", message: capText(message, SANDBOX_CAPS.maxErrorMessageChars) };
}
