/**
 * Helpers for the MCP server tests: free ports, server-everything over HTTP, and the process checks
 * that prove a test left nothing running (read from /proc, since a server's children are not ours).
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { freePort } from "../test-support/net";
export { freePort };
import path from "node:path";
import { REPO_ROOT } from "../env";
import { egressAllow } from "../net/egress-policy";

export const FIXTURES = path.join(import.meta.dirname, "fixtures");
export const EVERYTHING_BIN = path.join(REPO_ROOT, "node_modules/.bin/mcp-server-everything");
/** The egress allow-list of these tests: their http/sse servers listen on 127.0.0.1, which is refused by default. */
export const LOOPBACK = egressAllow("127.0.0.1");


/** Running and not a zombie (a zombie has exited; only its parent has yet to reap it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Live descendants of `root`, by walking /proc's parent links. */
export function descendants(root = process.pid): number[] {
  const parent = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue;
      parent.set(Number(entry), Number(fields[1]));
    } catch {
      // it exited while we looked
    }
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const current = queue.shift()!;
    for (const [pid, ppid] of parent) {
      if (ppid === current) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

export async function waitUntil(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** Pids a fixture wrote to its PID_FILE (one a line). */
export function readPids(file: string): number[] {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map(Number);
}

export interface EverythingHttp {
  url: string;
  proc: ChildProcess;
  stop: () => Promise<void>;
}

/**
 * server-everything over HTTP ("streamableHttp": POST/GET /mcp; "sse": GET /sse + POST /message), on a
 * free port given through its PORT variable; resolves once it says it listens.
 */
export async function startEverythingHttp(mode: "streamableHttp" | "sse"): Promise<EverythingHttp> {
  const port = await freePort();
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(port) };
  const proc: ChildProcess = spawn(process.execPath, [EVERYTHING_BIN, mode], {
    env: env as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGKILL");
    await exited;
  };
  let output = "";
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything ${mode} did not listen within 30 s:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port|running on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on("data", onData);
    proc.stderr!.on("data", onData);
    proc.once("exit", (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`server-everything ${mode} exited (${code}):\n${output}`));
    });
  });
  try {
    await listening;
  } catch (err) {
    await stop();
    throw err;
  }
  const url = mode === "sse" ? `http://127.0.0.1:${port}/sse` : `http://127.0.0.1:${port}/mcp`;
  return { url, proc, stop };
}
