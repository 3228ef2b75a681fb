/**
 * The fallback where the runner cannot make cgroups (not root, nothing delegated, not Linux): niceness.
 * CFS weighs a thread by its nice value (each step ≈ 1.25× less weight, the kernel's sched_prio_to_weight),
 * so a workspace whose rollouts are spread over n processes gets each of them niced by log1.25(n): the
 * workspace's processes together weigh about what one un-niced process does, however many it runs. Inside
 * a workspace, runs share alike (a process weighs 1 / (runs × its run's processes)). Sandbox processes start
 * BASE_NICE above the runner and its engine, so that user code takes less than the model does.
 *
 * Niceness is per thread on Linux: every thread of the process is set (threads made later inherit it). An
 * unprivileged runner can raise a niceness but not lower it: a running process whose share should grow
 * keeps its niceness until it ends (it gets less than its share, never more), and an idle process whose
 * niceness is above what a new rollout should get is not reused for it (canReuse: the pool starts a fresh
 * one). Coarser than cgroups: weights are rounded to whole nice steps, capped at 19, and only processes of
 * this runner are weighed (another runner's, or anything else on the machine, is not).
 */
import os from "node:os";
import { threadIds } from "./proc";
import { Unshared, type CpuShareMode, type SandboxPlacement } from "./share";

/** One nice step divides a thread's CFS weight by about this. */
const NICE_STEP = 1.25;
const MAX_NICE = 19;
/**
 * Where sandbox processes start: 6 steps (¼ the weight of one engine thread) below the runner and its
 * engine at nice 0. At 3, the engine got 2/3 of the CPUs beside twelve spinners and normal rollouts' model
 * calls took 2.3× as long. Not SERVICE_WEIGHT's 12 steps: niceness ends at 19, and the steps above the base
 * are what tell a workspace of 1 busy process from one of 18; past 19 every process weighs alike.
 */
export const BASE_NICE = 6;
const OTHER = "\0other";

/** The niceness of a process that should weigh 1 / `divisor` of a workspace. */
export function niceFor(divisor: number): number {
  return Math.min(MAX_NICE, BASE_NICE + Math.max(0, Math.round(Math.log(Math.max(1, divisor)) / Math.log(NICE_STEP))));
}

export interface NiceShareOptions {
  /** Whether this process may lower a niceness (CAP_SYS_NICE): proc.ts canLowerNice. */
  canLower: boolean;
  /** Sets a process's niceness, every thread of it; false where it was refused. Default: setpriority per thread. */
  setNice?: (pid: number, nice: number) => boolean;
  procRoot?: string;
}

interface Busy {
  ws: string;
  run: string;
}

export class NiceShare extends Unshared {
  override readonly mode: CpuShareMode = "nice";
  // With autogroup, a session of its own would put the engine beside all of the runner's session at one
  // weight each: the 12 spinners and the engine got alike, and the engine's two threads, preempted at every
  // barrier, slowed normal rollouts' model calls 20× (bench/fairness.ts --case workspaces).
  override readonly sameSession = true;
  private readonly busy = new Map<number, Busy>();
  /** The niceness each live process was last given. */
  private readonly nice = new Map<number, number>();
  private readonly canLower: boolean;
  private readonly setNice: (pid: number, nice: number) => boolean;

  constructor(reason: string, options: NiceShareOptions) {
    super(
      `CPU fair share: nice fallback (cgroups unavailable: ${reason}): sandbox processes niced by how many busy processes their workspace and run have` +
        (options.canLower ? "" : "; niceness is never lowered (no CAP_SYS_NICE): a reused process that would need it is replaced"),
      reason,
    );
    this.canLower = options.canLower;
    const procRoot = options.procRoot ?? "/proc";
    this.setNice = options.setNice ?? ((pid, n) => setThreadsNice(pid, n, procRoot));
  }

  /** The niceness `pid` was last given (undefined: never set, i.e. the runner's own). */
  niceOf(pid: number): number | undefined {
    return this.nice.get(pid);
  }

  override canReuse(pid: number, placement: SandboxPlacement | undefined): boolean {
    if (this.canLower) return true;
    const key = keyOf(placement);
    return (this.nice.get(pid) ?? 0) <= this.target(key, 1);
  }

  override assign(pid: number, placement: SandboxPlacement | undefined): void {
    const before = this.busy.get(pid);
    const key = keyOf(placement);
    this.busy.set(pid, key);
    this.renice(key.ws);
    if (before && before.ws !== key.ws) this.renice(before.ws);
  }

  override release(pid: number): void {
    const before = this.busy.get(pid);
    this.busy.delete(pid);
    if (before) this.renice(before.ws);
  }

  override forget(pid: number): void {
    this.nice.delete(pid);
    this.release(pid);
  }

  /** The niceness a process of `key` should have, with `extra` more processes in its run than are busy now. */
  private target(key: Busy, extra = 0): number {
    const runs = new Map<string, number>();
    for (const b of this.busy.values()) if (b.ws === key.ws) runs.set(b.run, (runs.get(b.run) ?? 0) + 1);
    runs.set(key.run, (runs.get(key.run) ?? 0) + extra);
    return niceFor(runs.size * (runs.get(key.run) as number));
  }

  private renice(ws: string): void {
    for (const [pid, key] of this.busy) {
      if (key.ws !== ws) continue;
      const want = this.target(key);
      const has = this.nice.get(pid) ?? 0;
      if (want === has || (want < has && !this.canLower)) continue;
      if (this.setNice(pid, want)) this.nice.set(pid, want);
    }
  }
}

const keyOf = (p: SandboxPlacement | undefined): Busy => (p ? { ws: p.workspaceId, run: p.runId } : { ws: OTHER, run: OTHER });

/**
 * setpriority on every thread of `pid` (on Linux niceness is per thread); the process alone elsewhere. A thread
 * started while we set them (by one not set yet) inherits the old niceness, so the list is read again until it
 * holds no thread we have not set (a few passes: a new thread of a set thread inherits the new niceness). A
 * CI run caught a Node child's late V8 thread left at 0 after a single pass.
 */
function setThreadsNice(pid: number, nice: number, procRoot: string): boolean {
  const done = new Set<number>();
  let ok = true;
  for (let pass = 0; pass < 5; pass++) {
    const tids = threadIds(pid, procRoot);
    const fresh = (tids.length > 0 ? tids : [pid]).filter((tid) => !done.has(tid));
    if (fresh.length === 0) break;
    for (const tid of fresh) {
      done.add(tid);
      try {
        os.setPriority(tid, nice);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ESRCH") ok = false; // a thread that ended is no failure
      }
    }
  }
  return ok;
}
