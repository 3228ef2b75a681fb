/**
 * A real runner server with its own real engine, for tests: a fresh runs folder, port 0 for the runner, a
 * free port for the engine it spawns, and the engine's last log lines in the error when it never gets ready
 * (a model that fails to load says why there, not in a bare timeout). One place for what six server tests
 * each wrote out.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRunnerClient, type RunnerClient } from "../client";
import { loadEnv } from "../env";
import { startRunnerServer, type RunnerServer } from "../server";
import { freePort } from "./net";

/** Loading the model can take minutes on a busy 2-core machine. */
export const ENGINE_READY_MS = 540_000;

export interface TestRunner {
  server: RunnerServer;
  /** A client with the runner's token. */
  client: RunnerClient;
  runsDir: string;
  /** Every line the engine wrote. */
  engineLogs: string[];
  /** Stops the runner (and its engine) and removes the runs folder. */
  close(): Promise<void>;
}

export async function startTestRunner(options: {
  name: string;
  token: string;
  /** More runner environment (the test's process environment is the base; the engine inherits it). */
  env?: Record<string, string>;
}): Promise<TestRunner> {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-${options.name}-`));
  const engineLogs: string[] = [];
  let server: RunnerServer | undefined;
  const close = async () => {
    await server?.close();
    fs.rmSync(runsDir, { recursive: true, force: true });
  };
  try {
    server = await startRunnerServer({
      env: loadEnv({
        ...process.env,
        RUNNER_PORT: "0",
        RUNNER_TOKEN: options.token,
        ENGINE_URL: "", // always its own engine, writing into runsDir
        ENGINE_PORT: String(await freePort()),
        ROLLBOOK_RUNS_DIR: runsDir,
        RUNNER_NAME: options.name,
        ...options.env,
      }),
      onEngineLog: (line) => engineLogs.push(line),
    });
    try {
      await server.supervisor.waitReady(ENGINE_READY_MS);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- engine log ---\n${engineLogs.slice(-40).join("\n")}`);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { server, client: createRunnerClient(server.url, options.token), runsDir, engineLogs, close };
}
