/**
 * One real engine for the server-test files that can share it, instead of one per file: each start loads
 * Python, torch and SmolLM2 (seconds of both cores idle, minutes when they are busy), and a dozen files did
 * it in turn. The server project's globalSetup starts a broker here, in vitest's main process, and names it
 * in ROLLBOOK_TEST_ENGINE_BROKER, which the test processes inherit. The first file that asks starts the
 * engine (a child of the main process, so it ends with it: ROLLBOOK_EXIT_WITH_PARENT); later files get the
 * same one. A run whose files never ask starts none.
 *
 * Sharing an engine means sharing its runs folder: the engine writes checkpoints under ROLLBOOK_RUNS_DIR,
 * which the runner must read, so every runner on the shared engine uses that one folder. The files that
 * share it use run ids no other sharing file uses (web-started runs have database ids). A file that needs an
 * engine of its own (one it kills, one with other engine settings, a runs folder on a small disk) starts
 * its own as before.
 */
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { EngineSupervisor } from "../engine/supervisor";
import { loadEnv, REPO_ROOT } from "../env";
import { randomToken } from "../tokens";
import { freePort } from "./net";

export const BROKER_ENV = "ROLLBOOK_TEST_ENGINE_BROKER";

export interface SharedEngine {
  url: string;
  token: string;
  /** The engine's ROLLBOOK_RUNS_DIR: the runs folder of every runner on it. */
  runsDir: string;
}

/** Loading the model can take minutes on a busy 2-core machine. */
const READY_MS = 540_000;

/** The engine lines the broker keeps (a few runs' worth of its log). */
const LOG_LINES = 2_000;

/** Main process: a loopback HTTP server whose GET / starts the engine once and answers its SharedEngine. */
export async function startEngineBroker(): Promise<{ url: string; close(): Promise<void> }> {
  let started: Promise<void> | null = null;
  let supervisor: EngineSupervisor | null = null;
  let runsDir: string | null = null;
  const logs: string[] = [];

  const start = async (): Promise<SharedEngine> => {
    // Only ENGINE_* are read here; the runner's own token is not used.
    const env = loadEnv({ ...process.env, RUNNER_TOKEN: "shared-engine-broker-unused-token" });
    runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-shared-engine-"));
    const port = await freePort();
    const token = randomToken();
    const url = `http://127.0.0.1:${port}`;
    supervisor = new EngineSupervisor({
      url,
      token,
      spawn: {
        python: env.ENGINE_PYTHON,
        args: ["-m", "rollbook_engine", "--host", "127.0.0.1", "--port", String(port), "--model", env.ENGINE_MODEL],
        cwd: path.join(REPO_ROOT, "gpu-runner/engine"),
        env: { ROLLBOOK_RUNS_DIR: runsDir },
      },
      healthIntervalMs: 500,
      onLog: (line) => {
        logs.push(line);
        if (logs.length > LOG_LINES) logs.shift();
      },
    });
    supervisor.start();
    try {
      await supervisor.waitReady(READY_MS);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- shared engine log ---\n${logs.slice(-40).join("\n")}`);
    }
    return { url, token, runsDir };
  };

  // GET / answers at once (fetch's own timeouts are shorter than a model load on a busy machine): 202 while
  // the engine loads, 200 with the SharedEngine once it is ready, 500 with the reason if it never gets ready.
  let ready: SharedEngine | null = null;
  let failed: string | null = null;
  const server = http.createServer((req, res) => {
    // GET /logs: the engine's last lines, for a test that checks what the engine said (sharedEngineLogs).
    if (req.url === "/logs") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(logs));
    started ??= start().then(
      (engine) => void (ready = engine),
      (err: Error) => void (failed = err.message),
    );
    if (ready) res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(ready));
    else if (failed) res.writeHead(500).end(failed);
    else res.writeHead(202).end("starting");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await supervisor?.stop();
      if (runsDir) fs.rmSync(runsDir, { recursive: true, force: true });
    },
  };
}

/** Test process: the shared engine (started on the first ask), or null where no broker runs (own engine then). */
export async function sharedEngine(): Promise<SharedEngine | null> {
  const broker = process.env[BROKER_ENV];
  if (!broker) return null;
  const deadline = Date.now() + READY_MS + 60_000;
  for (;;) {
    const res = await fetch(broker);
    if (res.status === 200) return (await res.json()) as SharedEngine;
    if (res.status !== 202) throw new Error(`the shared test engine did not start: ${await res.text()}`);
    await res.body?.cancel();
    if (Date.now() > deadline) throw new Error(`the shared test engine was not ready within ${READY_MS + 60_000} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The shared engine's last log lines (null where no broker runs). */
export async function sharedEngineLogs(): Promise<string[] | null> {
  const broker = process.env[BROKER_ENV];
  if (!broker) return null;
  return (await (await fetch(`${broker}/logs`)).json()) as string[];
}
