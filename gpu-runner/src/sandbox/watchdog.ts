/**
 * Decides when a rollout's isolate must die; it runs in the sandbox process, next to the isolate (the runner
 * keeps a backstop of its own, remote.ts). isolated-vm's own `timeout` counts CPU time only within one
 * synchronous call into the isolate: code that runs after an `await` (a continuation) is not covered, and
 * time spent awaiting the host (ctx.chat) is not CPU time at all. So three limits are enforced here:
 * - wall clock: the whole rollout's own time (scenario + reward, model work included), limits
 *   .rollout_timeout_ms. The runner pauses it (a `clock` message) while the rollout only waits for a slot on
 *   the shared engine (rollout-clock.ts); ABSOLUTE_LIMIT_FACTOR × the limit of real time ends it regardless;
 * - CPU: CPU time since the current phase began (continuations included), limits.cpu_timeout_ms — see cpuNs;
 * - abort: the run was stopped (AbortSignal).
 * It also notices an isolate that V8 disposed by itself (heap limit) while no call was running. Stopping
 * disposes the isolate, which ends any execution in it at once, and rejects `stopped` so callers racing
 * against it return without waiting on a promise that may never settle.
 */
import type ivm from "isolated-vm";
import type { LimitsConfig } from "../../../contracts";
import type { StopReason } from "./worker/protocol";
import { PausableTimer } from "./pausable-timer";
import { ABSOLUTE_LIMIT_FACTOR } from "./rollout-clock";

export type { StopReason };

export class StopError extends Error {
  constructor(readonly reason: StopReason) {
    super(`rollout stopped: ${reason}`);
  }
}

/** How often CPU time is sampled: small next to any sane cpu_timeout_ms, cheap for dozens of rollouts. */
const CPU_POLL_MS = 20;

export class Watchdog {
  reason: StopReason | null = null;
  readonly stopped: Promise<never>;
  private reject!: (err: StopError) => void;
  private readonly wallTimer: PausableTimer;
  private readonly absoluteTimer: NodeJS.Timeout;
  private readonly cpuTimer: NodeJS.Timeout;
  private phaseCpuStart: { isolateNs: bigint; processUs: number } | null = null;
  private phaseCpuMs: number;
  private readonly onAbort = () => this.stop("abort");

  constructor(
    private readonly isolate: ivm.Isolate,
    private readonly limits: LimitsConfig,
    private readonly signal?: AbortSignal,
  ) {
    this.phaseCpuMs = limits.cpu_timeout_ms;
    this.stopped = new Promise<never>((_, reject) => (this.reject = reject));
    // Nobody may be racing against it when it fires (between phases); that is not an unhandled error.
    this.stopped.catch(() => {});
    this.wallTimer = new PausableTimer(limits.rollout_timeout_ms, () => this.stop("wall"));
    this.absoluteTimer = setTimeout(() => this.stop("wall"), ABSOLUTE_LIMIT_FACTOR * limits.rollout_timeout_ms);
    this.cpuTimer = setInterval(() => this.poll(), CPU_POLL_MS);
    signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /** Start counting CPU time for a new call into the isolate (scenario, then reward), against `cpuMs`. */
  startPhase(cpuMs = this.limits.cpu_timeout_ms): void {
    this.phaseCpuMs = cpuMs;
    if (!this.isolate.isDisposed) this.phaseCpuStart = { isolateNs: this.isolate.cpuTime, processUs: processCpuUs() };
  }

  /** The runner's clock: paused while the rollout only waits for an engine slot (its limit is not running). */
  setClockPaused(paused: boolean): void {
    this.wallTimer.setPaused(paused);
  }

  /** The rollout's own time so far, as this watchdog counted it. */
  get ranMs(): number {
    return this.wallTimer.elapsed();
  }

  stop(reason: StopReason): void {
    if (this.reason) return;
    this.reason = reason;
    if (!this.isolate.isDisposed) this.isolate.dispose();
    this.reject(new StopError(reason));
  }

  /** Race a call into the isolate against the limits; a failure that was a stop rejects as a StopError. */
  guard<T>(work: Promise<T>): Promise<T> {
    work.catch(() => {}); // it rejects after a stop too ("Isolate is disposed"); the stop wins the race.
    return Promise.race([work, this.stopped]).catch((err: unknown) => {
      throw this.asStop(err);
    });
  }

  /**
   * What a failed call into the isolate means: a stop already decided, or one isolated-vm made itself
   * (its heap-limit kill, its own `timeout`), or the user's error as it is.
   */
  asStop(err: unknown): unknown {
    if (err instanceof StopError) return err;
    const message = err instanceof Error ? err.message : String(err);
    if (!this.reason) {
      if (/memory limit/i.test(message) || this.isolate.isDisposed) this.stop("memory");
      else if (/execution timed out/i.test(message)) this.stop("cpu");
    }
    return this.reason ? new StopError(this.reason) : err;
  }

  dispose(): void {
    this.wallTimer.clear();
    clearTimeout(this.absoluteTimer);
    clearInterval(this.cpuTimer);
    this.signal?.removeEventListener("abort", this.onAbort);
  }

  private poll(): void {
    if (this.reason) return;
    if (this.isolate.isDisposed) return this.stop("memory");
    if (this.phaseCpuStart === null) return;
    try {
      if (this.cpuNs(this.phaseCpuStart) > this.phaseCpuMs * 1e6) this.stop("cpu");
    } catch {
      // Disposed between the check and the read: the next poll sees it.
    }
  }

  /**
   * CPU time the current call has used. isolated-vm's `cpuTime` is the time its thread spent inside the
   * isolate, whether or not the OS gave that thread a core: with four busy loops on two cores, a 3 s loop
   * read 3.0 s of "CPU time" while the process got 1.2 s. On a loaded machine that turned memory attacks
   * (which spend their time in GC near the heap limit) into CPU timeouts, and would stop an honest reward
   * function for the machine's load. So the isolate's time counts only as far as this process really got
   * the CPU (one sandbox per process, pool.ts, so the process's CPU is this rollout's); the wall-clock limit
   * still bounds a rollout that the machine starves.
   */
  private cpuNs(start: { isolateNs: bigint; processUs: number }): number {
    const isolateNs = Number(this.isolate.cpuTime - start.isolateNs);
    const processNs = (processCpuUs() - start.processUs) * 1_000;
    return Math.min(isolateNs, processNs);
  }
}

function processCpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
