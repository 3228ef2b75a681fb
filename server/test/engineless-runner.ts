/**
 * The REAL runner server (gpu-runner/src/server.ts) in the test's process on a random port, its engine
 * pointed at a closed port: compile checks, refusals, re-scores and plain rewards need no engine. One
 * place for what three server tests used to set up by hand.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startRunnerServer, type RunnerServer } from "@/gpu-runner/src/server";
import { closedPort } from "./harness";

export interface EnginelessRunner {
  server: RunnerServer;
  url: string;
  token: string;
  /** Its ROLLBOOK_RUNS_DIR (a temp folder, removed on close). */
  runsDir: string;
  close(): Promise<void>;
}

/** `env`: more runner settings (e.g. ROLLBOOK_SHARED_CHECKPOINT_DIR). */
export async function startEnginelessRunner(name: string, env: Record<string, string> = {}): Promise<EnginelessRunner> {
  const token = `${name}-token-0123456789`;
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-${name}-`));
  const server = await startRunnerServer({
    env: loadRunnerEnv({
      RUNNER_PORT: "0",
      RUNNER_TOKEN: token,
      ENGINE_URL: `http://127.0.0.1:${await closedPort()}`,
      ENGINE_TOKEN: `${name}-engine-token`,
      ROLLBOOK_RUNS_DIR: runsDir,
      RUNNER_NAME: name,
      ...env,
    } as Partial<NodeJS.ProcessEnv> as NodeJS.ProcessEnv),
    onEngineLog: () => {},
  });
  return {
    server,
    url: server.url,
    token,
    runsDir,
    close: async () => {
      await server.close();
      fs.rmSync(runsDir, { recursive: true, force: true });
    },
  };
}
