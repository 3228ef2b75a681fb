/**
 * The starvation rule on given figures (the kernel's are read by cpu-meter.ts; cgroup-limits.test.ts runs
 * it on a really starved rollout): a rollout denied a CPU a quarter or more of its own time is `starved`,
 * whether in its own process or through the engine serving its calls; one that was not runnable is not.
 */
import { describe, expect, it } from "vitest";
import { LimitsConfig } from "../../../../contracts";
import { RolloutClock } from "../rollout-clock";
import { STARVED_SHARE, starvation, starvedError } from "./starvation";

const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 20_000 });

/** A clock at `ran` ms of its own time, `served` of them with a call on the engine. */
function clockAt(ran: number, served = 0): RolloutClock {
  let now = 0;
  const clock = new RolloutClock(() => now);
  clock.startService();
  now = served;
  clock.endService();
  now = ran;
  return clock;
}

describe("starvation", () => {
  it("counts its process's wait for a CPU", () => {
    const st = starvation({ cpuMs: 1_200, waitMs: 17_000, engineWaitShare: null, ranMs: null }, clockAt(20_000));
    expect(st).toMatchObject({ ranMs: 20_000, cpuMs: 1_200, waitMs: 17_000, deniedMs: 17_000 });
    const e = starvedError(LIMITS, clockAt(20_000), st!);
    expect(e.kind).toBe("starved");
    expect(e.message).toBe(
      "starved of CPU: the wall-clock limit of 20.0 s (limits.rollout_timeout_ms) ran out while the runner's CPUs were busy: the rollout got 1.2 s of CPU in 20.0 s and waited 17.0 s for one; waited 0.0 s for an engine slot. The runner's load, not this rollout's code",
    );
  });

  it("counts model time lost to an engine that waited for a CPU", () => {
    // Mostly waiting on the model; the engine spent 60% of its runnable time waiting: 18 s × 0.6 lost.
    const st = starvation({ cpuMs: 300, waitMs: 100, engineWaitShare: 0.6, ranMs: null }, clockAt(20_000, 18_000));
    expect(st?.engineLostMs).toBeCloseTo(10_800);
    expect(starvedError(LIMITS, clockAt(20_000, 18_000), st!).message).toContain("its model calls lost 10.8 s to an engine waiting for a CPU");
  });

  it("does not call a rollout starved that had the CPU it asked for, or was not asking", () => {
    // A loop that had the CPU: its own code's timeout.
    expect(starvation({ cpuMs: 19_000, waitMs: 900, engineWaitShare: 0, ranMs: null }, clockAt(20_000))).toBeNull();
    // Awaiting an MCP server that never answers: not runnable, so no wait, whatever the machine's load.
    expect(starvation({ cpuMs: 50, waitMs: 10, engineWaitShare: 0.9, ranMs: null }, clockAt(20_000, 0))).toBeNull();
    // Just under the share.
    expect(starvation({ cpuMs: 0, waitMs: STARVED_SHARE * 20_000 - 1, engineWaitShare: null, ranMs: null }, clockAt(20_000))).toBeNull();
    expect(starvation({ cpuMs: 0, waitMs: STARVED_SHARE * 20_000, engineWaitShare: null, ranMs: null }, clockAt(20_000))).not.toBeNull();
    // Not measured.
    expect(starvation(null, clockAt(20_000))).toBeNull();
  });

  it("counts only the window its limits count (from the sandbox's open), when the meter had the clock", () => {
    // 4 s of clock, of which the first 2 s were the process starting (starved, not counted by the limit).
    expect(starvation({ cpuMs: 10, waitMs: 100, engineWaitShare: null, ranMs: 2_000 }, clockAt(4_000))).toBeNull();
    expect(starvation({ cpuMs: 400, waitMs: 1_600, engineWaitShare: null, ranMs: 2_000 }, clockAt(4_000))).toMatchObject({ ranMs: 2_000, waitMs: 1_600 });
  });

  it("caps a process's wait at its own time (several threads can wait at once)", () => {
    expect(starvation({ cpuMs: 0, waitMs: 55_000, engineWaitShare: 1, ranMs: null }, clockAt(20_000, 20_000))).toMatchObject({ waitMs: 20_000, deniedMs: 20_000 });
  });
});
