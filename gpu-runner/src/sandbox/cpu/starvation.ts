/**
 * Whether a rollout stopped by its wall clock was starved of CPU: the runner's load, not its code. Its
 * clock counts its own time (code and model work); of that, the time it was denied a CPU is
 *   its sandbox process's run-queue wait (its longest-waiting thread's: the isolate's, when it computes)
 * + its time with model calls on the engine × the share of the engine's runnable time spent waiting.
 * A rollout denied a CPU for STARVED_SHARE or more of its time is `starved`: a loop that spins by itself
 * gets the CPU it asks for on a quiet runner and still times out as `timeout`; a rollout awaiting a slow
 * MCP server is not runnable while it waits, so it is never counted as starved.
 */
import type { LimitsConfig, RolloutError } from "../../../../contracts";
import type { RolloutClock } from "../rollout-clock";
import type { CpuUse } from "./cpu-meter";

/** Denied a CPU for at least this share of its own time: starved. */
export const STARVED_SHARE = 0.25;

export interface Starvation {
  /** Its own time (what the limit counts), ms. */
  ranMs: number;
  cpuMs: number;
  /** Its sandbox process's wait for a CPU, ms (capped at ranMs). */
  waitMs: number;
  /** Model time lost to a waiting engine, ms. */
  engineLostMs: number;
  deniedMs: number;
}

export function starvation(use: CpuUse | null | undefined, clock: RolloutClock): Starvation | null {
  if (!use) return null;
  // Its own time while the sandbox was open (what its limits count), else all of its clock's.
  const ranMs = use.ranMs ?? clock.runningMs();
  if (ranMs <= 0) return null;
  const waitMs = Math.min(use.waitMs, ranMs);
  const engineLostMs = use.engineWaitShare === null ? 0 : Math.min(clock.servingMs(), ranMs) * use.engineWaitShare;
  const deniedMs = Math.min(ranMs, waitMs + engineLostMs);
  return deniedMs >= STARVED_SHARE * ranMs ? { ranMs, cpuMs: use.cpuMs, waitMs, engineLostMs, deniedMs } : null;
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** "starved of CPU: … got 1.2 s of CPU in 20.0 s and waited 14.3 s for one …: the runner's CPUs were busy, …" */
export function starvedError(limits: LimitsConfig, clock: RolloutClock, st: Starvation): RolloutError {
  const engine = st.engineLostMs >= 50 ? `, and its model calls lost ${s(st.engineLostMs)} to an engine waiting for a CPU` : "";
  return {
    kind: "starved",
    message:
      `starved of CPU: the wall-clock limit of ${s(limits.rollout_timeout_ms)} (limits.rollout_timeout_ms) ran out while the runner's CPUs were busy: ` +
      `the rollout got ${s(st.cpuMs)} of CPU in ${s(st.ranMs)} and waited ${s(st.waitMs)} for one${engine}; ` +
      `waited ${s(clock.queuedMs())} for an engine slot. The runner's load, not this rollout's code`,
  };
}
