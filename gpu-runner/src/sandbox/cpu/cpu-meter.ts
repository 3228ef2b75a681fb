/**
 * What CPU a rollout got and was denied while it ran, from the kernel's own accounts (/proc schedstat): its
 * sandbox process's run time and run-queue wait (time runnable but not running, which includes time its
 * cgroup was throttled), and the engine's share of runnable time spent waiting over the same window (a
 * rollout that mostly waits on model calls is slowed by a starved engine, not in its own process). Read
 * when the rollout's sandbox opens (its process started and ready: the window its limits count) and again
 * when it is stopped, before its process is killed.
 */
import { schedUse, type SchedUse } from "./proc";

export interface CpuUse {
  /** CPU its sandbox process got, ms. */
  cpuMs: number;
  /**
   * The longest its sandbox process's threads waited for a CPU while runnable, ms: the isolate's thread,
   * when the rollout computes (threads wait together when a group is throttled: their sum would count the
   * same time several times).
   */
  waitMs: number;
  /** Of the engine's runnable time in the window, the share it waited for a CPU (0–1); null: not measured. */
  engineWaitShare: number | null;
  /** The rollout's own time (its clock's running time) in the window, ms; null without a clock. */
  ranMs: number | null;
}

/** Engine readings this recent are shared by rollouts starting together (the engine has dozens of threads). */
const ENGINE_READING_MS = 100;
let engineReading: { at: number; pids: string; use: Totals | null } | null = null;

type Totals = Omit<SchedUse, "threadWaitNs">;

function sum(pids: readonly number[], procRoot: string): Totals | null {
  let cpuNs = 0;
  let waitNs = 0;
  let read = false;
  for (const pid of pids) {
    const use = schedUse(pid, procRoot);
    if (!use) continue;
    cpuNs += use.cpuNs;
    waitNs += use.waitNs;
    read = true;
  }
  return read ? { cpuNs, waitNs } : null;
}

function engineUse(pids: readonly number[], procRoot: string): Totals | null {
  const key = pids.join(",");
  const now = performance.now();
  if (engineReading && engineReading.pids === key && now - engineReading.at < ENGINE_READING_MS) return engineReading.use;
  const use = sum(pids, procRoot);
  engineReading = { at: now, pids: key, use };
  return use;
}

export class CpuMeter {
  private readonly start: SchedUse | null;
  private readonly engineStart: Totals | null;
  private readonly enginePids: readonly number[];
  private readonly ranAtStart: number | null;

  /**
   * `enginePids`: the runner's engine processes (none: not measured). `ranMs`: the rollout's clock (its own
   * time), so that the window's time is counted as its limit counts it.
   */
  constructor(
    private readonly pid: number | undefined,
    enginePids: readonly number[],
    private readonly ranMs?: () => number,
    private readonly procRoot = "/proc",
  ) {
    this.ranAtStart = ranMs ? ranMs() : null;
    this.start = pid === undefined ? null : schedUse(pid, procRoot);
    this.enginePids = enginePids;
    this.engineStart = enginePids.length > 0 ? engineUse(enginePids, procRoot) : null;
  }

  /** Since the start; null where the sandbox process's figures cannot be read (not Linux, process gone). */
  read(): CpuUse | null {
    if (this.pid === undefined || this.start === null) return null;
    const now = schedUse(this.pid, this.procRoot);
    if (!now) return null;
    let engineWaitShare: number | null = null;
    const engineNow = this.engineStart ? sum(this.enginePids, this.procRoot) : null;
    if (this.engineStart && engineNow) {
      const wait = engineNow.waitNs - this.engineStart.waitNs;
      const cpu = engineNow.cpuNs - this.engineStart.cpuNs;
      // An engine restarted meanwhile reads lower than at the start: no measure, rather than a wrong one.
      engineWaitShare = wait >= 0 && cpu >= 0 && wait + cpu > 0 ? wait / (wait + cpu) : wait >= 0 && cpu >= 0 ? 0 : null;
    }
    let waitNs = 0;
    for (const [tid, wait] of now.threadWaitNs) waitNs = Math.max(waitNs, wait - (this.start.threadWaitNs.get(tid) ?? 0));
    return {
      cpuMs: Math.max(0, now.cpuNs - this.start.cpuNs) / 1e6,
      waitMs: waitNs / 1e6,
      engineWaitShare,
      ranMs: this.ranMs && this.ranAtStart !== null ? this.ranMs() - this.ranAtStart : null,
    };
  }
}
