/**
 * How the runner shares its CPUs between workspaces: what every mode (cgroup-share.ts, nice-share.ts, or
 * none) offers the sandbox pool (pool.ts) and the server. A sandbox process is placed each time it is
 * acquired for a rollout (processes are reused across runs and workspaces), released back to an idle place
 * when the rollout ends, and forgotten when it exits. The runner's service processes (its engine) are
 * placed apart from the sandboxes, so that user code cannot starve the model every rollout waits on.
 */
import type { CpuShareMode } from "../../../../contracts";

export type { CpuShareMode };

/** Whose CPU share a sandbox process computes under. */
export interface SandboxPlacement {
  workspaceId: string;
  runId: string;
}

export interface CpuShare {
  readonly mode: CpuShareMode;
  /** One line for the runner's log: the mechanism, where, and (for a fallback) why not cgroups. */
  readonly description: string;
  /** Why the runner does not share its CPUs with cgroups (absent when it does). */
  readonly reason?: string;
  /**
   * The engine must run in the runner's session: where the kernel groups the processes of a session
   * (autogroup, for processes in the root cgroup), niceness weighs a process only against its session's.
   */
  readonly sameSession: boolean;
  /**
   * Whether idle process `pid` may take a rollout of `placement`. False only where placing it would need a
   * privilege the runner lacks (lowering a niceness): the pool starts a fresh process instead.
   */
  canReuse(pid: number, placement: SandboxPlacement | undefined): boolean;
  /** Process `pid` now computes for `placement` (undefined: a check outside any run). */
  assign(pid: number, placement: SandboxPlacement | undefined): void;
  /** Process `pid` is idle again. */
  release(pid: number): void;
  /** Process `pid` exited. */
  forget(pid: number): void;
  /** One of the runner's own service processes (its engine), kept apart from the sandboxes. */
  placeService(pid: number): void;
  /** The service processes placed so far that are still alive (the starvation measure reads the engine's). */
  servicePids(): number[];
  /** Undo what the mode made (groups removed once empty). */
  close(): Promise<void>;
}

/** Tracks service pids; places nothing. The base of every mode, and the whole of "off". */
export class Unshared implements CpuShare {
  readonly mode: CpuShareMode = "off";
  readonly sameSession: boolean = false;
  protected readonly services = new Set<number>();

  constructor(
    readonly description = "CPU fair share: off (RUNNER_CPU_SHARE=off): sandbox processes compete with each other and the engine as equals",
    readonly reason?: string,
  ) {}

  canReuse(_pid: number, _placement: SandboxPlacement | undefined): boolean {
    return true;
  }
  assign(_pid: number, _placement: SandboxPlacement | undefined): void {}
  release(_pid: number): void {}
  forget(_pid: number): void {}

  placeService(pid: number): void {
    this.services.add(pid);
  }

  servicePids(): number[] {
    for (const pid of this.services) {
      try {
        process.kill(pid, 0);
      } catch (err) {
        // Gone (an engine that restarted has a new pid); EPERM would mean alive under another user.
        if ((err as NodeJS.ErrnoException).code === "ESRCH") this.services.delete(pid);
      }
    }
    return [...this.services];
  }

  async close(): Promise<void> {}
}

/**
 * How much more CPU weight the runner's service processes (the engine) get than all sandboxes together.
 * The engine's sampling is shared between runs by the fair queue (engine/fair-queue.ts) and every rollout
 * waits on it, so user code gets what the engine leaves, and 1/17 while both want every CPU. Measured with
 * bench/fairness.ts --case workspaces on 2 cores: at 4×, beside twelve spinning rollouts the engine waited
 * for a CPU 21–25% of its runnable time (9–15% alone) and normal rollouts' model time grew by two thirds;
 * at 16×, 7–20% (6–12% alone), model time as alone. The price: a CPU engine's training step holds the sandboxes to
 * that 1/17 too while it runs (their rollouts wait on the engine then anyway).
 */
export const SERVICE_WEIGHT = 16;
