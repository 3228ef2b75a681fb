/**
 * "Ready" means a user can open the page and press Run: the web server listens, the runner answers and its
 * engine has loaded the model, and the pages have been rendered once (so the first visitor does not pay
 * for loading the server bundles). server/index.ts listens first and prints "ready" only after this.
 */
import http from "node:http";
import type { RunnerHandle } from "../runner-client";
import { rootMessage } from "../errors";

export interface WaitForEngineOptions {
  runner: Pick<RunnerHandle, "status" | "name" | "url">;
  log: (msg: string) => void;
  /** How often to ask the runner. */
  pollMs?: number;
  /** How often to say we are still waiting (the engine loads the model in ~10–60 s on CPU). */
  remindMs?: number;
  signal?: AbortSignal;
}

/**
 * Resolves when the runner reports its engine `ready`; logs why not every `remindMs` meanwhile (runner
 * unreachable, engine starting, engine failed). Never gives up: the web server serves pages meanwhile, and a
 * runner started later is picked up. Rejects only when `signal` aborts.
 */
export async function waitForEngine(opts: WaitForEngineOptions): Promise<void> {
  const pollMs = opts.pollMs ?? 500;
  const remindMs = opts.remindMs ?? 15_000;
  let lastReason = "";
  let lastLogged = 0;
  for (;;) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error("aborted");
    let reason: string;
    try {
      const status = await opts.runner.status();
      if (status.engine.state === "ready") return;
      reason =
        status.engine.state === "failed"
          ? `the runner's engine failed${status.engine.last_restart ? `: ${status.engine.last_restart.reason}` : ""}`
          : `the runner's engine is ${status.engine.state} (loading the model)`;
    } catch (e) {
      reason = `runner '${opts.runner.name}' at ${opts.runner.url} is not answering yet (${rootMessage(e)})`;
    }
    const now = Date.now();
    if (reason !== lastReason || now - lastLogged >= remindMs) {
      opts.log(`waiting: ${reason}`);
      lastReason = reason;
      lastLogged = now;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/**
 * Renders the pages a first visitor sees once, on this process, so their server bundles are loaded and
 * their first real request is fast. Answers of any status count (a signed-out visitor is redirected).
 */
export async function prewarmPages(baseUrl: string, paths: string[], timeoutMs = 30_000): Promise<void> {
  for (const p of paths) {
    await new Promise<void>((resolve) => {
      const req = http.get(`${baseUrl}${p}`, { timeout: timeoutMs }, (res) => {
        res.resume();
        res.on("end", () => resolve());
        res.on("error", () => resolve());
      });
      req.on("timeout", () => req.destroy());
      req.on("error", () => resolve());
    });
  }
}
