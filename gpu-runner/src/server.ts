/**
 * The runner's entry point: `node --no-node-snapshot --import tsx gpu-runner/src/server.ts`.
 * Starts (or attaches to) the engine, serves the tRPC API on RUNNER_HOST:RUNNER_PORT, prints
 * `RUNNER READY <port>` once listening, and on SIGTERM/SIGINT stops its runs and its own engine child.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { loadEnv, REPO_ROOT, type RunnerEnv } from "./env";
import { restartCause } from "./engine/restart-recovery";
import { EngineSupervisor, type SupervisorOptions } from "./engine/supervisor";
import { FairQueue } from "./engine/fair-queue";
import { EventLog } from "./events/event-log";
import { RunManager } from "./loop/run-manager";
import { sandboxPool } from "./sandbox/pool";
import { closeCpuShare, openCpuShare } from "./sandbox/cpu/open";
import { handleRunnerHttp, isRunnerHttpRoute, type RunnerHttpDeps } from "./http/routes";
import { declaredBytes, sendRefusal, tooLargeMessage, trpcTooLarge } from "./http/body-cap";
import { runnerRouter } from "./router";
import { bearerToken, tokenMatches, type RunnerContext } from "./trpc";
import { weakTokenWarning } from "../../contracts/tokens";

export interface RunnerServer {
  port: number;
  url: string;
  manager: RunManager;
  supervisor: EngineSupervisor;
  /** The fair queue every run's model calls wait in for an engine slot. */
  slots: FairQueue;
  close: () => Promise<void>;
}

export interface StartRunnerOptions {
  env?: RunnerEnv;
  /** Engine log lines (default: stderr with an [engine] prefix). */
  onEngineLog?: (line: string) => void;
  supervisor?: Partial<SupervisorOptions>;
}

/** Python: become a process group leader (in the same session), then run the interpreter on the rest of argv. */
const SETPGRP_THEN_EXEC = "import os, sys; os.setpgrp(); os.execv(sys.executable, [sys.executable] + sys.argv[1:])";

export async function startRunnerServer(options: StartRunnerOptions = {}): Promise<RunnerServer> {
  const env = options.env ?? loadEnv();
  const engineUrl = env.ENGINE_URL ?? `http://127.0.0.1:${env.ENGINE_PORT}`;
  // Before the engine and any sandbox process start: both are placed in it from their first instruction.
  const cpu = openCpuShare({ mode: env.RUNNER_CPU_SHARE, cgroup: env.RUNNER_CGROUP });
  const supervisor = new EngineSupervisor({
    url: engineUrl,
    // Unset: the supervisor makes a random token for the engine it spawns (loadEnv demands one with ENGINE_URL).
    token: env.ENGINE_TOKEN,
    spawn: env.ENGINE_URL
      ? undefined
      : {
          python: env.ENGINE_PYTHON,
          // In the runner's session (the nice fallback): the engine makes itself a process group leader first.
          args: [...(cpu.sameSession ? ["-c", SETPGRP_THEN_EXEC] : []), "-m", "rollbook_engine", "--host", "127.0.0.1", "--port", String(env.ENGINE_PORT), "--model", env.ENGINE_MODEL],
          cwd: path.join(REPO_ROOT, "gpu-runner/engine"),
          // The engine's stderr is the runner's log: a progress bar (transformers' "Loading weights") is a
          // line of carriage returns in it unless that log is a terminal.
          env: { ROLLBOOK_RUNS_DIR: env.ROLLBOOK_RUNS_DIR, ...(process.stderr.isTTY ? {} : { HF_HUB_DISABLE_PROGRESS_BARS: "1" }) },
        },
    onLog: options.onEngineLog,
    // The runs waiting on the engine say why it went away (their model calls fail meanwhile).
    onRestart: (restart) => manager.logToActiveRuns("warn", `${restartCause(restart)}; the runs wait for it, and what it was doing is sent again once`),
    onSpawn: (pid) => cpu.placeService(pid),
    ownSession: !cpu.sameSession,
    ...options.supervisor,
  });
  supervisor.start();

  /** The engine ready, or the run's signal aborted (a run waiting through a restart can still be stopped). */
  const waitReady = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason ?? new Error("aborted"));
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      supervisor.waitReady().then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  const events = new EventLog(env.ROLLBOOK_RUNS_DIR);
  // The engine's batch capacity, as its last health check said (else the setting): more calls would only
  // queue inside the engine, where the runner can neither order them nor tell waiting from working.
  const slots = new FairQueue(() => supervisor.status().health?.batch_capacity ?? env.ENGINE_BATCH_CAPACITY);
  const manager = new RunManager(
    events,
    {
      engine: supervisor.client,
      slots,
      waitReady: (signal) => waitReady(signal),
      status: () => {
        const s = supervisor.status();
        return { state: s.state, restarts: s.restarts, health: s.health, last_restart: s.lastRestart };
      },
      watch: {
        restarts: () => supervisor.status().restarts,
        lastRestart: () => supervisor.status().lastRestart,
        restarting: () => supervisor.state === "restarting",
        probe: () => supervisor.client.health(2_000).then(() => undefined),
        waitReady: (signal) => waitReady(signal),
      },
    },
    env.RUNNER_NAME,
    { allowStdio: env.MCP_ALLOW_STDIO, sandbox: { allowNetwork: env.MCP_STDIO_NETWORK, readPaths: env.MCP_STDIO_READ_PATHS, repoRoot: REPO_ROOT } },
    env.ROLLBOOK_SHARED_CHECKPOINT_DIR,
    env.EGRESS_ALLOW,
  );
  manager.recoverInterrupted();

  const trpcHandler = createHTTPHandler({
    router: runnerRouter,
    // Files travel in request bodies (an experiment is up to 8 MB; JSON escaping can grow it). Counted as
    // the body streams; a declared length over it is refused before tRPC sees the request (below).
    maxBodySize: env.RUNNER_MAX_REQUEST_BYTES,
    createContext: ({ req }): RunnerContext => ({
      manager,
      authorized: tokenMatches(bearerToken(req), env.RUNNER_TOKEN),
      pool: { models: [env.ENGINE_MODEL], capacity: env.RUNNER_CAPACITY, cpu_share: { mode: cpu.mode, ...(cpu.reason ? { reason: cpu.reason } : {}) } },
    }),
  });
  // Checkpoint archives and the chat pass-through are byte streams, served beside tRPC (http/routes.ts).
  const httpDeps: RunnerHttpDeps = {
    runsDir: env.ROLLBOOK_RUNS_DIR,
    token: env.RUNNER_TOKEN,
    engineFetch: (pathname, init, workspace) => (workspace ? supervisor.client.forWorkspace(workspace) : supervisor.client).fetchRaw(pathname, init),
    detokenize: (ids) => supervisor.client.detokenize(ids),
    externalTrain: (req, signal) => manager.externalTrain(req, signal),
    tinker: { isOwnRun: (runId) => manager.exists(runId), publishCheckpoint: manager.publishCheckpointFn() },
    maxRequestBytes: env.RUNNER_MAX_REQUEST_BYTES,
    imports: {
      sharedDir: env.ROLLBOOK_SHARED_CHECKPOINT_DIR,
      runnerName: env.RUNNER_NAME,
      isRunning: (runId) => manager.isRunning(runId),
      forgetLog: (runId) => events.forget(runId),
    },
  };
  const server = http.createServer((req, res) => {
    if (isRunnerHttpRoute(req.url)) void handleRunnerHttp(req, res, httpDeps);
    else if (declaredBytes(req) > env.RUNNER_MAX_REQUEST_BYTES) {
      sendRefusal(res, trpcTooLarge(tooLargeMessage(env.RUNNER_MAX_REQUEST_BYTES, "RUNNER_MAX_REQUEST_BYTES")));
    } else trpcHandler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.RUNNER_PORT, env.RUNNER_HOST, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      await manager.stopAll();
      manager.close();
      server.closeAllConnections(); // open event streams would otherwise hold close() forever
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await supervisor.stop();
      sandboxPool.closeAll(); // idle sandbox processes would otherwise linger until their idle timeout
      events.close();
      await closeCpuShare(); // its groups go once the killed processes have left them
    })());

  return { port, url: `http://${env.RUNNER_HOST}:${port}`, manager, supervisor, slots, close };
}

async function main(): Promise<void> {
  const env = loadEnv();
  const weak = weakTokenWarning("RUNNER_TOKEN", env.RUNNER_TOKEN);
  if (weak) console.warn(`runner: warning: ${weak}`);
  if (process.env.MCP_SECRET_VARS) {
    console.warn("runner: warning: MCP_SECRET_VARS is no longer read: experiments never reach the runner's environment; admins store secrets per workspace (Team → Secrets)");
  }
  const runner = await startRunnerServer({ env });
  console.log(`RUNNER READY ${runner.port}`);
  // The start log's own word that runs can start (scripts/first-start.servertest.ts waits for it): the
  // runner answers at once, the engine only once its model is loaded, and a misconfigured one never does.
  const engineStarted = Date.now();
  runner.supervisor.waitReady().then(
    () => console.log(`runner: engine ready (${env.ENGINE_MODEL}, ${((Date.now() - engineStarted) / 1000).toFixed(1)} s)`),
    (err: unknown) => console.error(`runner: the engine is not ready: ${(err as Error).message}`),
  );
  const shutdown = (signal: string) => {
    console.error(`runner: ${signal}, stopping runs and the engine`);
    runner.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(path.resolve(entry)).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
