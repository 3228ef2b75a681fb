/**
 * A sandbox as the runner holds it: a sandbox process from the pool (pool.ts), one experiment bundle opened
 * in it, entry points called one at a time, and the bridge's requests answered by the runner's Bridge. It
 * trusts nothing that comes back: every message is validated, and the process is watched — if it exits, or
 * stays silent past the wall clock plus a grace, or ignores an abort, it is killed and the call fails with
 * the reason. A call fails with a SandboxFailure: user code threw, a limit stopped it, or the process died.
 */
import { z } from "zod";
import type { LimitsConfig } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import type { Bridge } from "./bridge";
import { CpuMeter, type CpuUse } from "./cpu/cpu-meter";
import { cpuShare } from "./cpu/open";
import type { SandboxPlacement } from "./cpu/share";
import { PausableTimer } from "./pausable-timer";
import { ABSOLUTE_LIMIT_FACTOR, type RolloutClock } from "./rollout-clock";
import { type SandboxExit, type SandboxProcess, sandboxPool } from "./pool";
import { type EntryFunction, type ErrorInfo, REMOTE_FUNCTIONS, STOP_REASONS, type StopReason, type ToSandbox } from "./worker/protocol";

/**
 * How long past limits.rollout_timeout_ms the runner waits for the process's own watchdog before killing it.
 * The backstop counts the rollout's own time (its RolloutClock, as the watchdog does), and real time up to
 * ABSOLUTE_LIMIT_FACTOR × the limit, plus this grace.
 */
const BACKSTOP_GRACE_MS = 5_000;
/** How long an aborted sandbox may take to stop by itself. */
const ABORT_GRACE_MS = 2_000;

export type SandboxEnd =
  | { type: "threw"; error: ErrorInfo }
  /** cpu: what the rollout's process got and was denied, read as it stopped (null: not measured). */
  | { type: "stop"; reason: StopReason; cpu?: CpuUse | null }
  | { type: "crash"; exit: SandboxExit };

export class SandboxFailure extends Error {
  constructor(readonly end: SandboxEnd) {
    super(end.type === "threw" ? end.error.message : end.type === "stop" ? `rollout stopped: ${end.reason}` : "the sandbox process died");
    this.name = "SandboxFailure";
  }
}

const ErrorInfoSchema = z.object({ name: z.string(), message: z.string(), stack: z.string().optional() });
const FromSandboxSchema = z.discriminatedUnion("t", [
  z.object({ t: z.literal("opened"), sid: z.number() }),
  z.object({ t: z.literal("returned"), sid: z.number(), value: z.unknown() }),
  z.object({ t: z.literal("failed"), sid: z.number(), error: ErrorInfoSchema, stop: z.enum(STOP_REASONS).nullable() }),
  z.object({ t: z.literal("host"), sid: z.number(), id: z.number().int(), fn: z.enum(REMOTE_FUNCTIONS), json: z.string() }),
  z.object({ t: z.literal("record"), sid: z.number(), logs: z.array(z.string()), metrics: z.array(z.tuple([z.string(), z.number()])) }),
]);

export interface RemoteSandbox {
  /** Calls an entry point; resolves with its (plain, unvalidated) result or rejects with a SandboxFailure.
   * `cpuMs` replaces limits.cpu_timeout_ms for this one call. */
  call(fn: EntryFunction, args: unknown[], cpuMs?: number): Promise<unknown>;
  /** Close the sandbox: its process goes back to the pool after a clean finish, else it is killed. */
  dispose(): void;
  /** CPU its process got and waited for since the sandbox opened (as it stopped, if it was stopped); null: not measured. */
  cpu(): CpuUse | null;
}

let nextSid = 1;

export interface OpenOptions {
  signal?: AbortSignal;
  /** The rollout's own clock (absent: real time, e.g. a group reward, which never waits for the engine). */
  clock?: RolloutClock;
  /** Whose CPU share the process computes under (absent: a check outside any run). */
  placement?: SandboxPlacement;
}

export async function openSandbox(compiled: CompiledExperiment, limits: LimitsConfig, bridge: Bridge, options: OpenOptions = {}): Promise<RemoteSandbox> {
  const { signal, clock, placement } = options;
  if (signal?.aborted) throw new SandboxFailure({ type: "stop", reason: "abort" });
  let proc: SandboxProcess;
  try {
    proc = await sandboxPool.acquire(limits.memory_mb, compiled.hash, signal, placement);
  } catch (err) {
    if (signal?.aborted) throw new SandboxFailure({ type: "stop", reason: "abort" });
    throw err; // SandboxUnavailable: no process could be started
  }
  // Aborted while the process was starting (acquire does not watch the signal then): the listener below
  // would never fire, and the call would run to its limits.
  if (signal?.aborted) {
    sandboxPool.release(proc, true);
    throw new SandboxFailure({ type: "stop", reason: "abort" });
  }
  // From here on the rollout's limits run (the watchdog starts as the sandbox opens): so does the meter.
  const meter = new CpuMeter(proc.pid, cpuShare().servicePids(), clock ? () => clock.runningMs() : undefined);
  const sid = nextSid++;
  let pending: { resolve: (v: unknown) => void; reject: (e: SandboxFailure) => void } | null = null;
  let failure: SandboxFailure | null = null;
  let disposed = false;
  let abortTimer: NodeJS.Timeout | undefined;

  /** The sandbox is finished for good: the process is killed and the call waiting (if any) fails. */
  const end = (f: SandboxFailure) => {
    // A stop says what CPU the process got and was denied: read now, while the process is still there.
    failure ??= f.end.type === "stop" ? new SandboxFailure({ ...f.end, cpu: meter.read() }) : f;
    proc.kill();
    pending?.reject(failure);
    pending = null;
  };
  const wallStop = () => end(new SandboxFailure({ type: "stop", reason: "wall" }));
  const backstop = new PausableTimer(limits.rollout_timeout_ms + BACKSTOP_GRACE_MS, wallStop);
  const absolute = setTimeout(wallStop, ABSOLUTE_LIMIT_FACTOR * limits.rollout_timeout_ms + BACKSTOP_GRACE_MS);
  // The watchdog in the process follows the same clock: each change travels over IPC.
  const onClock = (paused: boolean) => {
    backstop.setPaused(paused);
    if (!failure && !disposed) proc.send({ t: "clock", sid, paused });
  };
  const unsubscribeClock = clock?.onChange(onClock);
  const onAbort = () => {
    proc.send({ t: "abort", sid });
    abortTimer = setTimeout(() => end(new SandboxFailure({ type: "stop", reason: "abort" })), ABORT_GRACE_MS);
  };
  signal?.addEventListener("abort", onAbort, { once: true });

  proc.onExit = (exit) => end(new SandboxFailure({ type: "crash", exit }));
  proc.onMessage = (raw) => {
    const parsed = FromSandboxSchema.safeParse(raw);
    if (!parsed.success) {
      const exit: SandboxExit = { code: null, signal: null, stderr: "the sandbox process sent a malformed message", killedByRunner: false };
      return end(new SandboxFailure({ type: "crash", exit }));
    }
    const m = parsed.data;
    if (m.sid !== sid) return; // a late message of an earlier sandbox in this process
    switch (m.t) {
      case "host":
        void bridge.call(m.fn, m.json).then((envelope) => {
          if (!failure && !disposed) proc.send({ t: "reply", sid, id: m.id, envelope });
        });
        return;
      case "record":
        bridge.addRecord(m.logs, m.metrics);
        return;
      case "opened":
      case "returned":
        pending?.resolve(m.t === "returned" ? m.value : undefined);
        pending = null;
        return;
      case "failed":
        // A stop leaves the process suspect (a thread may still be busy inside V8): it is not reused.
        if (m.stop) return end(new SandboxFailure({ type: "stop", reason: m.stop }));
        pending?.reject(new SandboxFailure({ type: "threw", error: m.error }));
        pending = null;
        return;
    }
  };

  const request = (m: ToSandbox) =>
    new Promise<unknown>((resolve, reject) => {
      if (failure) return reject(failure);
      pending = { resolve, reject };
      proc.send(m);
    });

  const dispose = () => {
    if (disposed) return;
    disposed = true;
    backstop.clear();
    clearTimeout(absolute);
    unsubscribeClock?.();
    clearTimeout(abortTimer);
    signal?.removeEventListener("abort", onAbort);
    if (!failure) proc.send({ t: "close", sid });
    sandboxPool.release(proc, !failure);
  };

  const js = proc.hashes.has(compiled.hash) ? null : compiled.js;
  proc.hashes.add(compiled.hash);
  try {
    const opened = request({ t: "open", sid, hash: compiled.hash, js, limits });
    if (clock?.paused) onClock(true); // waiting already (nothing waits before a sandbox opens today)
    await opened;
  } catch (err) {
    dispose();
    throw err;
  }
  const cpu = () => {
    const stopped = failure?.end;
    return stopped?.type === "stop" && stopped.cpu !== undefined ? stopped.cpu : proc.exit ? null : meter.read();
  };
  return { call: (fn, args, cpuMs) => request({ t: "call", sid, fn, args, ...(cpuMs === undefined ? {} : { cpuMs }) }), dispose, cpu };
}
