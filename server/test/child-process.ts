/**
 * The stack's TypeScript entry points (server/test/delivery-web.ts, synthetic-runner.ts) as child
 * processes for the delivery tests and the benchmarks: started with tsx, ready once they print their
 * READY line, their output kept for assertions and error messages.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import readline from "node:readline";

const ROOT = path.resolve(import.meta.dirname, "../..");

export interface Child {
  proc: ChildProcess;
  port: number;
  lines: string[];
  waitFor: (pattern: RegExp, ms?: number) => Promise<string>;
}

/**
 * A TypeScript entry point as a child process; resolves once it prints `ready` (with its port) within
 * readyMs, else kills it (no orphan left holding ports or database connections) and rejects.
 */
export async function spawnTs(script: string, env: Record<string, string>, ready: RegExp, readyMs = 60_000): Promise<Child> {
  const proc = spawn(process.execPath, ["--no-node-snapshot", "--import", "tsx", script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const listeners = new Set<() => void>();
  for (const stream of [proc.stdout!, proc.stderr!]) {
    readline.createInterface({ input: stream }).on("line", (line) => {
      lines.push(line);
      for (const l of [...listeners]) l();
    });
  }
  const waitFor = (pattern: RegExp, ms = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const hit = lines.find((l) => pattern.test(l));
        if (!hit) return false;
        listeners.delete(check);
        clearTimeout(timer);
        resolve(hit);
        return true;
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`${script}: no ${pattern} within ${ms} ms; output:\n${lines.slice(-30).join("\n")}`));
      }, ms);
      if (!check()) listeners.add(check);
      proc.once("exit", (code) => reject(new Error(`${script} exited (${code}):\n${lines.slice(-30).join("\n")}`)));
    });
  const line = await waitFor(ready, readyMs).catch((e: unknown) => {
    proc.kill("SIGKILL");
    throw e;
  });
  return { proc, port: Number(line.split(" ").at(-1)), lines, waitFor };
}

export async function stopChild(child: Child | undefined): Promise<void> {
  // Already gone: exited, or killed by a signal (a SIGKILLed child has signalCode set and exitCode null).
  if (!child || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  const exited = new Promise((r) => child.proc.once("exit", r));
  child.proc.kill("SIGTERM");
  await exited;
}

