/**
 * Supervises the Python engine: spawns it as a child in its own process group, waits until it is healthy,
 * health-checks it periodically and restarts it with exponential backoff when it dies. It only ever
 * signals its own child (by process group id): never processes found by name, which could belong to
 * someone else on a shared GPU box. With ENGINE_URL set it spawns nothing and only watches that engine.
 *
 * Every restart it decides on is recorded with its reason (exit code or signal, "likely out of memory" for a
 * SIGKILL it did not send, the engine's last stderr lines, or the failed health checks) in
 * status().lastRestart, and reported through onRestart so the runner can tell the runs that were waiting.
 *
 * What the engine's health calls for telling the operator (backend-notice.ts: a GPU sampling without vLLM) goes
 * to onNotice once per engine process, not at every health check: a restarted engine may say it once more.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { EngineClient } from "./client";
import { engineNotices } from "./backend-notice";
import { randomToken } from "../tokens";
import { type EngineHealth, type RunnerNotice } from "../../../contracts";

export type EngineState = "starting" | "ready" | "restarting" | "failed";

/** Why the engine was last restarted, and when (ms since the epoch). */
export interface EngineRestart {
  at: number;
  /** For the runner's operator (its status, its log): the exit with the engine's memory and last output. */
  reason: string;
  /**
   * What every run's log and rollouts may say (restart-recovery.ts restartCause): the kind of exit only. One
   * engine serves every workspace, and its memory figures and last output are the operator's business
   * (docs/security.md): its output may even quote another workspace's prompt.
   */
  cause: string;
}

/** How many of the dead engine's last stderr lines a restart reason quotes. */
const REASON_LINES = 5;

export interface SupervisorOptions {
  /** Spawn this engine; absent → `url` is an external engine we only health-check. */
  spawn?: {
    python: string;
    args: string[];
    cwd: string;
    env?: Record<string, string>;
  };
  url: string;
  /**
   * The engine's bearer token. Unset: a random one is made for the engines this supervisor spawns (passed
   * to them as ENGINE_TOKEN), so only this process can call them. An external engine (no `spawn`) needs
   * the token it was started with.
   */
  token?: string;
  /** How long a fresh engine may take to become healthy (model load; first GGUF conversion is slow). */
  startTimeoutMs?: number;
  healthIntervalMs?: number;
  /** Consecutive failed health checks of a live child before it is restarted. */
  unhealthyRestartAfter?: number;
  maxBackoffMs?: number;
  /** Give up (state "failed") after this many restarts without a healthy period in between. */
  maxConsecutiveRestarts?: number;
  /** Engine stdout/stderr lines (default: written to stderr with an [engine] prefix). */
  onLog?: (line: string) => void;
  /**
   * Called once per engine process with each notice its health calls for (backend-notice.ts), e.g. a GPU
   * sampling with transformers. Default: a warning in the runner's log (stderr).
   */
  onNotice?: (notice: RunnerNotice) => void;
  /** Called when the engine died or stopped answering and a restart is under way, with the reason. */
  onRestart?: (restart: EngineRestart) => void;
  /**
   * Called with each spawned engine's pid, at once (before it has loaded anything): the runner places it in
   * its CPU share's service group, apart from the sandboxes (sandbox/cpu/share.ts).
   */
  onSpawn?: (pid: number) => void;
  /**
   * Spawn the engine in a session of its own (default), or in the runner's: then the spawned command must
   * make itself a process group leader (setpgrp) for stop() to reach what it spawned. The runner's nice
   * fallback needs the latter: where the kernel groups processes by session (autogroup), niceness weighs
   * processes only against others of their session (sandbox/cpu/nice-share.ts).
   */
  ownSession?: boolean;
}

export interface EngineStatus {
  state: EngineState;
  restarts: number;
  health: EngineHealth | null;
  pid: number | null;
  lastError: string | null;
  lastRestart: EngineRestart | null;
}

/** The kind of exit alone: "exited with code 1", "killed by SIGKILL, likely out of memory". */
export function exitKind(code: number | null, signal: NodeJS.Signals | null): string {
  return signal === "SIGKILL" ? "killed by SIGKILL, likely out of memory" : signal ? `killed by ${signal}` : `exited with code ${code ?? "unknown"}`;
}

/** "exited with code 1", "killed by SIGKILL — likely out of memory", plus the last stderr lines. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null, stderrTail: readonly string[], rssBytes: number | null = null): string {
  const rss = rssBytes === null ? "" : ` — RSS was ${(rssBytes / 2 ** 30).toFixed(1)} GB at the last health check`;
  let reason =
    signal === "SIGKILL"
      ? `killed by SIGKILL, likely out of memory${rss} (the kernel's OOM killer sends SIGKILL; the runner did not)`
      : signal
        ? `killed by ${signal}`
        : `exited with code ${code ?? "unknown"}`;
  const last = stderrTail.slice(-REASON_LINES).map((l) => l.trim()).filter(Boolean);
  if (last.length) reason += `; last output: ${last.join(" | ").slice(-800)}`;
  return reason;
}

export class EngineSupervisor {
  readonly client: EngineClient;
  private child: ChildProcess | null = null;
  private stateValue: EngineState = "starting";
  private restarts = 0;
  private consecutiveRestarts = 0;
  private health: EngineHealth | null = null;
  private lastError: string | null = null;
  private stopping = false;
  private timer: NodeJS.Timeout | null = null;
  private restartTimer: NodeJS.Timeout | null = null;
  private failedChecks = 0;
  private lastRestart: EngineRestart | null = null;
  private readyWaiters = new Set<() => void>();
  private tail: string[] = [];
  /** The engine's resident memory at the last health check: what a SIGKILL's reason quotes. */
  private rssBytes: number | null = null;
  /**
   * The notice kinds already told about the current engine process: cleared when one is spawned. An external
   * engine (ENGINE_URL, as scripts/gpu-runner.sh runs it) is told about once per runner process.
   */
  private noticed = new Set<string>();
  private readonly exitHook = () => this.killGroup("SIGKILL");
  private readonly opts: Required<Omit<SupervisorOptions, "spawn" | "onRestart" | "onSpawn" | "ownSession" | "token">> &
    Pick<SupervisorOptions, "spawn" | "onRestart" | "onSpawn" | "ownSession">;
  /** Given to every engine this supervisor spawns; the client sends it. */
  private readonly token: string | undefined;

  constructor(options: SupervisorOptions) {
    this.opts = {
      startTimeoutMs: 600_000,
      healthIntervalMs: 5_000,
      unhealthyRestartAfter: 3,
      maxBackoffMs: 30_000,
      maxConsecutiveRestarts: 8,
      onLog: (line) => process.stderr.write(`[engine] ${line}\n`),
      onNotice: (notice) => process.stderr.write(`runner: warning: ${notice.message}\n`),
      // An explicit `undefined` in options must not erase a default.
      ...(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as SupervisorOptions),
    };
    this.token = options.token ?? (options.spawn ? randomToken() : undefined);
    this.client = new EngineClient(options.url, this.token);
  }

  status(): EngineStatus {
    return {
      state: this.stateValue,
      restarts: this.restarts,
      health: this.health,
      pid: this.child?.pid ?? null,
      lastError: this.lastError,
      lastRestart: this.lastRestart,
    };
  }

  get state(): EngineState {
    return this.stateValue;
  }

  /** Start (spawn or attach) and begin health checks. Resolves immediately; use waitReady() to wait. */
  start(): void {
    this.stopping = false;
    process.once("exit", this.exitHook);
    if (this.opts.spawn) this.spawnChild();
    this.schedule(500);
  }

  /** Resolves when the engine is ready; rejects on timeout or when it has failed for good. */
  waitReady(timeoutMs = this.opts.startTimeoutMs): Promise<void> {
    if (this.stateValue === "ready") return Promise.resolve();
    if (this.stateValue === "failed") return Promise.reject(new Error(`engine failed: ${this.lastError ?? "unknown"}`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.readyWaiters.delete(check);
        reject(new Error(`engine not ready after ${timeoutMs} ms (${this.lastError ?? this.stateValue})`));
      }, timeoutMs);
      const check = () => {
        if (this.stateValue === "ready") {
          clearTimeout(timer);
          this.readyWaiters.delete(check);
          resolve();
        } else if (this.stateValue === "failed") {
          clearTimeout(timer);
          this.readyWaiters.delete(check);
          reject(new Error(`engine failed: ${this.lastError ?? "unknown"}\n${this.tail.slice(-20).join("\n")}`));
        }
      };
      this.readyWaiters.add(check);
    });
  }

  /** Stop health checks and terminate our child's process group (SIGTERM, then SIGKILL after a grace). */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.restartTimer) clearTimeout(this.restartTimer);
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      this.killGroup("SIGTERM");
      const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), graceMs).unref());
      if ((await Promise.race([exited, timeout])) === "timeout") {
        this.killGroup("SIGKILL");
        await exited;
      }
    }
    this.child = null;
    process.removeListener("exit", this.exitHook);
  }

  private setState(state: EngineState): void {
    this.stateValue = state;
    for (const w of [...this.readyWaiters]) w();
  }

  private killGroup(signal: NodeJS.Signals): void {
    const pid = this.child?.pid;
    if (!pid) return;
    try {
      process.kill(-pid, signal); // the child's own process group: it and whatever it spawned
    } catch {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
  }

  private spawnChild(): void {
    const spec = this.opts.spawn!;
    this.failedChecks = 0;
    this.noticed.clear(); // a new engine process: what it calls for is said once more
    const child = spawn(spec.python, spec.args, {
      cwd: spec.cwd,
      // ROLLBOOK_EXIT_WITH_PARENT: the engine ends itself if this process dies without stopping it.
      // ENGINE_TOKEN: the engine refuses every route but /health without it.
      env: { ...process.env, ...spec.env, ...(this.token ? { ENGINE_TOKEN: this.token } : {}), PYTHONUNBUFFERED: "1", ROLLBOOK_EXIT_WITH_PARENT: "1" },
      // Own session and process group, so stop() can signal the whole group and nothing else (ownSession
      // false: the command makes its own group, in the runner's session).
      detached: this.opts.ownSession !== false,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    if (child.pid !== undefined) this.opts.onSpawn?.(child.pid);
    const stderrTail: string[] = []; // this child's own, for the reason of its death
    const onData = (buf: Buffer, stderr: boolean) => {
      for (const line of buf.toString("utf8").split("\n")) {
        if (!line.trim()) continue;
        this.tail.push(line);
        if (this.tail.length > 200) this.tail.shift();
        if (stderr) {
          stderrTail.push(line);
          if (stderrTail.length > REASON_LINES) stderrTail.shift();
        }
        this.opts.onLog(line);
        if (line.includes("ENGINE READY")) this.schedule(0);
      }
    };
    child.stdout?.on("data", (buf: Buffer) => onData(buf, false));
    child.stderr?.on("data", (buf: Buffer) => onData(buf, true));
    child.on("error", (err) => {
      this.lastError = `could not start engine: ${err.message}`;
      // A spawn failure (no such interpreter) emits "error" and no "exit": handle it as a death here.
      if (child.pid === undefined && this.child === child) {
        this.child = null;
        if (!this.stopping) this.scheduleRestart(this.lastError, "engine could not start");
      }
    });
    child.on("exit", (code, signal) => {
      if (this.child !== child) return;
      this.child = null;
      this.health = null;
      if (this.stopping) return;
      const reason = `engine ${describeExit(code, signal, stderrTail, this.rssBytes)}`;
      this.rssBytes = null;
      this.lastError = this.lastError?.startsWith("could not start") ? this.lastError : reason;
      this.scheduleRestart(reason, `engine ${exitKind(code, signal)}`);
    });
  }

  private scheduleRestart(reason: string, cause: string): void {
    if (this.stopping || this.restartTimer) return;
    if (this.consecutiveRestarts >= this.opts.maxConsecutiveRestarts) {
      this.opts.onLog(`giving up on the engine after ${this.consecutiveRestarts} restarts: ${reason}`);
      this.setState("failed");
      return;
    }
    const restart: EngineRestart = { at: Date.now(), reason, cause };
    this.lastRestart = restart;
    this.opts.onLog(`restarting the engine: ${reason}`);
    try {
      this.opts.onRestart?.(restart);
    } catch (err) {
      this.opts.onLog(`onRestart failed: ${(err as Error).message}`);
    }
    const delay = Math.min(this.opts.maxBackoffMs, 1_000 * 2 ** this.consecutiveRestarts);
    this.consecutiveRestarts += 1;
    this.restarts += 1;
    this.setState("restarting");
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      if (this.child) {
        // Unhealthy but alive: end it first; its exit handler is bypassed since we respawn here.
        const old = this.child;
        this.child = null;
        try {
          process.kill(-old.pid!, "SIGKILL");
        } catch {
          // gone already
        }
      }
      this.spawnChild();
      this.schedule(500);
    }, delay);
  }

  /** Each notice this health calls for, once per engine process (the health checks run every few seconds). */
  private tellNotices(health: EngineHealth): void {
    for (const notice of engineNotices(health)) {
      if (this.noticed.has(notice.kind)) continue;
      this.noticed.add(notice.kind);
      try {
        this.opts.onNotice(notice);
      } catch (err) {
        this.opts.onLog(`onNotice failed: ${(err as Error).message}`);
      }
    }
  }

  private schedule(ms: number): void {
    if (this.stopping) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.check(), ms);
  }

  private async check(): Promise<void> {
    if (this.stopping) return;
    const spawned = Boolean(this.opts.spawn);
    if (spawned && !this.child) {
      this.schedule(this.opts.healthIntervalMs);
      return; // a restart is pending
    }
    try {
      const health = await this.client.health(Math.max(2_000, this.opts.healthIntervalMs));
      this.health = health;
      this.rssBytes = this.child?.pid ? residentBytes(this.child.pid) : null;
      this.failedChecks = 0;
      this.tellNotices(health);
      if (health.status === "ok") {
        this.consecutiveRestarts = 0;
        this.lastError = null;
        this.setState("ready");
      } else if (health.status === "error") {
        this.lastError = health.error ?? "engine reports an error";
        if (this.stateValue === "ready") this.setState("starting");
      }
    } catch (err) {
      this.failedChecks += 1;
      const starting = this.stateValue === "starting" || this.stateValue === "restarting";
      // While starting, connection refusals are expected (the model is loading).
      if (!starting) {
        this.lastError = (err as Error).message;
        if (this.failedChecks >= this.opts.unhealthyRestartAfter) {
          if (spawned) {
            this.scheduleRestart(`engine stopped answering: ${this.failedChecks} health checks failed (${this.lastError})`, `engine stopped answering: ${this.failedChecks} health checks failed`);
          } else {
            this.setState("restarting"); // external engine: nothing to restart, keep polling
          }
        }
      }
    }
    const soon = this.stateValue === "ready" ? this.opts.healthIntervalMs : Math.min(1_000, this.opts.healthIntervalMs);
    this.schedule(soon);
  }
}

/** A process's resident set size from /proc (Linux), or null where it cannot be read. */
function residentBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
