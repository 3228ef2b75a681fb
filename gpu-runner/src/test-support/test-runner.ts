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
import { sharedEngine } from "./shared-engine";

/** Loading the model can take minutes on a busy 2-core machine. */
export const ENGINE_READY_MS = 540_000;

export interface TestRunner {
  server: RunnerServer;
  /** A client with the runner's token. */
  client: RunnerClient;
  runsDir: string;
  /** Every line the engine wrote (none on the shared engine, whose lines its broker keeps). */
  engineLogs: string[];
  /** Stops the runner (and its engine) and removes the runs folder. */
  close(): Promise<void>;
}

export async function startTestRunner(options: {
  name: string;
  token: string;
  /** More runner environment (the test's process environment is the base; the engine inherits it). */
  env?: Record<string, string>;
  /**
   * "shared": the server tests' one shared engine (shared-engine.ts) and its runs folder, for a file whose
   * run ids no other sharing file uses and that needs no engine settings of its own; where no broker runs
   * (outside the server project) its own engine after all. Default "own": an engine of its own, writing into
   * a runs folder of its own.
   */
  engine?: "own" | "shared";
}): Promise<TestRunner> {
  const shared = options.engine === "shared" ? await sharedEngine() : null;
  // The shared runs folder is the broker's to remove, with the engine.
  const runsDir = shared?.runsDir ?? fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-${options.name}-`));
  const engineLogs: string[] = [];
  let server: RunnerServer | undefined;
  const close = async () => {
    await server?.close();
    if (!shared) fs.rmSync(runsDir, { recursive: true, force: true });
  };
  try {
    server = await startRunnerServer({
      env: loadEnv({
        ...process.env,
        RUNNER_PORT: "0",
        RUNNER_TOKEN: options.token,
        // Its own engine, writing into runsDir, or the shared one, whose runs folder runsDir is.
        ...(shared ? { ENGINE_URL: shared.url, ENGINE_TOKEN: shared.token } : { ENGINE_URL: "", ENGINE_PORT: String(await freePort()) }),
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
