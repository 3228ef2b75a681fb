/**
 * The REAL runner (gpu-runner/src/server.ts) as a child process with its REAL engine (its own, or the server
 * tests' shared one), for the chaos tests: a process can be paused (SIGSTOP), resumed and killed like a real
 * box, which the in-process runner of the other tests cannot. Its runs folder is a temp dir, or the shared
 * engine's (its events.jsonl files are what the tests compare the database with); it is registered with the
 * test database under `name`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "@/gpu-runner/src/test-support/net";
import { sharedEngine } from "@/gpu-runner/src/test-support/shared-engine";
import { registerRunner } from "../runner-client";
import type { Db } from "../db-types";
import { spawnTs, stopChild, type Child } from "./child-process";

export interface RunnerProcess {
  child: Child;
  url: string;
  token: string;
  runsDir: string;
  runnerId: string;
  /** The run's log as the runner holds it (every whole line of runs/<run>/events.jsonl). */
  log(runId: string): { seq: number; type: string; attempt?: number }[];
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** Loading the model can take minutes on a busy 2-core machine. */
const READY_MS = 540_000;

/**
 * `engine: "shared"`: on the server tests' shared engine and its runs folder (test-support/shared-engine.ts;
 * its own engine where no broker runs), for a test that pauses or kills the runner but not the engine.
 */
export async function startRunnerProcess(db: Db, name: string, env: Record<string, string> = {}, opts: { engine?: "own" | "shared" } = {}): Promise<RunnerProcess> {
  const shared = opts.engine === "shared" ? await sharedEngine() : null;
  // The shared runs folder is the broker's to remove, with the engine.
  const runsDir = shared?.runsDir ?? fs.mkdtempSync(path.join(os.tmpdir(), `rollbook-${name}-`));
  const token = `${name}-token-0123456789abcdef`;
  const engineEnv: Record<string, string> = shared ? { ENGINE_URL: shared.url, ENGINE_TOKEN: shared.token } : { ENGINE_URL: "", ENGINE_PORT: String(await freePort()) };
  const child = await spawnTs(
    "gpu-runner/src/server.ts",
    { RUNNER_PORT: "0", RUNNER_TOKEN: token, RUNNER_NAME: name, ROLLBOOK_RUNS_DIR: runsDir, ...engineEnv, ...env },
    /^RUNNER READY \d+$/,
    READY_MS,
  );
  const url = `http://127.0.0.1:${child.port}`;
  // READY means listening; the engine may still be loading its model: wait until the runner says it is ready.
  const deadline = Date.now() + READY_MS;
  for (;;) {
    const res = await fetch(`${url}/status`, { headers: { authorization: `Bearer ${token}` } }).catch(() => null);
    const body = res?.ok ? ((await res.json()) as { result?: { data?: { engine?: { state?: string } } } }) : null;
    if (body?.result?.data?.engine?.state === "ready") break;
    if (Date.now() > deadline) throw new Error(`runner ${name}: engine not ready within ${READY_MS} ms:\n${child.lines.slice(-30).join("\n")}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const row = await registerRunner(db, { name, url, token });
  const pid = child.proc.pid!;
  return {
    child,
    url,
    token,
    runsDir,
    runnerId: row.id,
    log(runId) {
      const file = path.join(runsDir, runId, "events.jsonl");
      if (!fs.existsSync(file)) return [];
      return fs
        .readFileSync(file, "utf8")
        .split("\n")
        .flatMap((l) => {
          try {
            return l ? [JSON.parse(l) as { seq: number; type: string; attempt?: number }] : [];
          } catch {
            return []; // a line being written
          }
        });
    },
    pause: () => process.kill(pid, "SIGSTOP"),
    resume: () => process.kill(pid, "SIGCONT"),
    async close() {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone already
      }
      await stopChild(child);
      if (!shared) fs.rmSync(runsDir, { recursive: true, force: true });
    },
  };
}
