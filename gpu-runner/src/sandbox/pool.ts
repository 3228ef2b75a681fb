/**
 * The runner's sandbox processes. Every isolate runs in a child process of the runner, one sandbox per
 * process at a time, because some of what user code can do to V8 ends a whole process, not an isolate:
 * splitting a 2^28-character string (a rope, cheap to build) into an array is a fatal "invalid size" error,
 * a Map or an array grown inside one builtin can run out of memory past the point isolated-vm can stop it,
 * and isolated-vm itself lets an isolate overshoot its heap limit by up to a gigabyte before it is killed.
 * In a child, any of that costs one rollout: the runner sees the process exit and reports why.
 *
 * Each process gets an address-space limit (ulimit -v) so that an overshoot is cut off in that process
 * rather than by the machine running out of memory. Processes are reused after a clean finish, killed after
 * any stop (an isolate stopped mid-execution may leave a thread still busy inside V8), kept idle for a
 * while, recycled after many uses or bundles, and capped in number.
 */
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { cpuShare } from "./cpu/open";
import type { SandboxPlacement } from "./cpu/share";
import { sandboxWorkerScript } from "./worker-script";
import type { ToSandbox } from "./worker/protocol";

/** At most this many sandbox processes at once; more rollouts wait for one. */
export const MAX_SANDBOX_PROCESSES = 64;
const MAX_IDLE = 16;
const IDLE_MS = 30_000;
const MAX_USES = 500;
/** Distinct experiment bundles one process may hold (each ~1 MB plus its code cache). */
const MAX_BUNDLES = 8;
// A hung start is killed after this. 20 s was too short on a busy 2-core machine: at load 20 (tests, two
// engines and a build beside a run) every start of a learning-bench run took longer and the run failed.
const START_TIMEOUT_MS = 60_000;
/**
 * Address space of a sandbox process: Node with an isolate reserves ~1.7 GB of virtual memory it never
 * touches, so the limit is that plus a few times the heap limit — generous for any rollout within
 * limits.memory_mb, and a wall for one that is not.
 */
export const addressSpaceMb = (memoryMb: number) => 2048 + 4 * memoryMb;
const STDERR_TAIL_CHARS = 4_096;

export interface SandboxExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The end of what the process wrote to stderr (V8 prints its fatal errors there). */
  stderr: string;
  /** The runner killed it (after a stop, or as idle): not a crash. */
  killedByRunner: boolean;
}

/** No sandbox process could be started: an infrastructure failure, not the rollout's. */
export class SandboxUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxUnavailable";
  }
}

export class SandboxProcess {
  readonly hashes = new Set<string>();
  uses = 0;
  /** Messages and the exit, for whoever holds the process now (remote.ts). */
  onMessage: ((m: unknown) => void) | null = null;
  onExit: ((exit: SandboxExit) => void) | null = null;
  exit: SandboxExit | null = null;
  idleTimer: NodeJS.Timeout | null = null;
  private tail = "";
  private killed = false;

  constructor(
    private readonly child: ChildProcess,
    readonly memoryMb: number,
    whenGone: (p: SandboxProcess) => void,
  ) {
    child.on("message", (m) => this.onMessage?.(m));
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (d: string) => {
      this.tail = (this.tail + d).slice(-STDERR_TAIL_CHARS);
    });
    child.stdin?.on("error", () => {}); // EPIPE when it dies while the script is still being written
    let gone = false;
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      if (gone) return;
      gone = true;
      this.exit = { code, signal, stderr: this.tail, killedByRunner: this.killed };
      if (this.idleTimer) clearTimeout(this.idleTimer);
      whenGone(this);
      this.onExit?.(this.exit);
    };
    // "close" comes after stderr is drained, so the tail holds V8's last words.
    child.on("close", end);
    child.on("error", () => {
      if (child.pid === undefined) end(null, null); // never started: no exit or close will follow
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  send(m: ToSandbox): void {
    if (this.exit || !this.child.connected) return;
    this.child.send(m, (err) => {
      if (err) this.kill(); // the channel broke: the process is of no further use
    });
  }

  kill(): void {
    if (this.exit || this.killed) return;
    this.killed = true;
    this.child.kill("SIGKILL");
  }

  /** Busy processes keep the runner's event loop alive; idle ones must not (tests, shutdown). */
  setBusy(busy: boolean): void {
    const handles = [this.child, this.child.channel, this.child.stderr as unknown as { ref(): void; unref(): void } | null];
    for (const h of handles) {
      if (busy) h?.ref();
      else h?.unref();
    }
  }
}

class SandboxPool {
  private readonly all = new Set<SandboxProcess>();
  private idle: SandboxProcess[] = [];
  private waiters: (() => void)[] = [];

  get size(): { live: number; idle: number } {
    return { live: this.all.size, idle: this.idle.length };
  }

  /**
   * A process for a sandbox of `memoryMb` that holds, or has room for, bundle `hash`, placed in
   * `placement`'s CPU share (cpu/share.ts) each time it is handed out: a process serves many runs and
   * workspaces in turn.
   */
  async acquire(memoryMb: number, hash: string, signal?: AbortSignal, placement?: SandboxPlacement): Promise<SandboxProcess> {
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error("aborted");
      const share = cpuShare();
      const fits = (p: SandboxProcess) => p.memoryMb === memoryMb && !p.exit && p.pid !== undefined && share.canReuse(p.pid, placement);
      const reuse = this.idle.find((p) => fits(p) && p.hashes.has(hash)) ?? this.idle.find((p) => fits(p) && p.hashes.size < MAX_BUNDLES);
      if (reuse) {
        this.idle = this.idle.filter((p) => p !== reuse);
        if (reuse.idleTimer) clearTimeout(reuse.idleTimer);
        share.assign(reuse.pid as number, placement);
        reuse.setBusy(true);
        return reuse;
      }
      if (this.all.size < MAX_SANDBOX_PROCESSES) return this.start(memoryMb, placement);
      // Full: an idle process of another size (or one the share cannot place here) makes room when it is
      // gone; else wait for one to free up.
      this.idle.shift()?.kill();
      await this.waitForChange(signal);
    }
  }

  /** Back to the pool after a clean finish, else killed. */
  release(p: SandboxProcess, reusable: boolean): void {
    p.uses++;
    p.onMessage = null;
    p.onExit = null;
    if (!reusable || p.exit || p.uses >= MAX_USES || this.idle.length >= MAX_IDLE) {
      p.kill();
      return;
    }
    if (p.pid !== undefined) cpuShare().release(p.pid);
    p.setBusy(false);
    p.idleTimer = setTimeout(() => {
      this.idle = this.idle.filter((q) => q !== p);
      p.kill();
    }, IDLE_MS);
    p.idleTimer.unref();
    this.idle.push(p);
    this.wake();
  }

  /** Kill the idle processes (a benchmark that compares rollouts which must each start their own). */
  dropIdle(): void {
    for (const p of this.idle) p.kill();
    this.idle = [];
  }

  /** Kill every sandbox process (the runner is shutting down). */
  closeAll(): void {
    for (const p of this.all) p.kill();
    this.idle = [];
  }

  private async start(memoryMb: number, placement: SandboxPlacement | undefined): Promise<SandboxProcess> {
    let script: string;
    try {
      script = await sandboxWorkerScript();
    } catch (err) {
      throw new SandboxUnavailable(`the sandbox process could not be built: ${(err as Error).message}`);
    }
    const node = [process.execPath, "--no-node-snapshot", "--input-type=module", "-"];
    const options: SpawnOptions = {
      stdio: ["pipe", "ignore", "pipe", "ipc"],
      // Nothing of the runner's environment (tokens, API keys) is the sandbox's business. MALLOC_ARENA_MAX:
      // glibc gives each thread that allocates under contention an arena reserving 64 MiB of address space,
      // up to 8 per core; V8's, libuv's and isolated-vm's threads reached 13–15 of them (~0.9 GiB) within a
      // few hundred rollouts, so the next thread or isolate no longer fitted under the address-space limit
      // and the process aborted mid-rollout ("std::system_error: Resource temporarily unavailable"). One
      // rollout runs per process at a time: two arenas leave no contention worth paying a gigabyte for.
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", NODE_ENV: "production", MALLOC_ARENA_MAX: "2" },
    };
    const child: ChildProcess =
      process.platform === "linux"
        ? spawn("/bin/sh", ["-c", 'ulimit -v "$1" 2>/dev/null; shift; exec "$@"', "rollbook-sandbox", String(addressSpaceMb(memoryMb) * 1024), ...node], options)
        : spawn(node[0]!, node.slice(1), options);
    // Placed before it boots: starting Node is the rollout's CPU, under its workspace's share.
    if (child.pid !== undefined) cpuShare().assign(child.pid, placement);
    const p = new SandboxProcess(child, memoryMb, (gone) => {
      if (gone.pid !== undefined) cpuShare().forget(gone.pid);
      this.all.delete(gone);
      this.idle = this.idle.filter((q) => q !== gone);
      this.wake();
    });
    this.all.add(p);
    child.stdin?.end(script);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        p.kill();
        reject(new SandboxUnavailable(`the sandbox process did not start within ${START_TIMEOUT_MS / 1000} s`));
      }, START_TIMEOUT_MS);
      p.onMessage = (m) => {
        if ((m as { t?: unknown } | null)?.t !== "ready") return;
        clearTimeout(timer);
        p.onMessage = null;
        p.onExit = null;
        resolve();
      };
      p.onExit = (exit) => {
        clearTimeout(timer);
        reject(new SandboxUnavailable(`the sandbox process exited while starting (code ${exit.code}, signal ${exit.signal}): ${exit.stderr.trim().slice(-500)}`));
      };
    });
    return p;
  }

  private waitForChange(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        reject(signal?.reason ?? new Error("aborted"));
      };
      const wake = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      this.waiters.push(wake);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}

/** The runner's one pool. */
export const sandboxPool = new SandboxPool();
