/**
 * RunManager.logToActiveRuns: what the runner calls when its engine restarts, so every run in progress says
 * why its model calls failed ("engine restarted: …") and finished runs are left alone.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ExperimentFiles } from "../../../contracts";
import { REPO_ROOT } from "../env";
import { EventLog } from "../events/event-log";
import { type RunEngine } from "./run-loop";
import { RunManager } from "./run-manager";

function files(): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const config = { ...JSON.parse(read("config.json")), num_steps: 1, groups_per_step: 1, rollouts_per_group: 2, eval_every: 0 };
  return { "scenario.ts": read("scenario.ts"), "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(config) };
}

/** An engine whose model calls wait until the run is stopped (the engine "went away" under the run). */
const hangingEngine: RunEngine = {
  chat: (_body, signal) =>
    new Promise((_resolve, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true })),
  train: () => {
    throw new Error("not reached");
  },
  latestStep: async () => 0,
  checkpoints: async () => [],
};

let dir: string | null = null;
afterEach(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = null;
});

describe("RunManager.logToActiveRuns", () => {
  it("appends a run.log event to every active run and to no finished one", async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-rm-"));
    const events = new EventLog(dir);
    const manager = new RunManager(
      events,
      {
        engine: hangingEngine,
        waitReady: async () => {},
        status: () => ({ state: "ready", restarts: 0, health: null, last_restart: null }),
      },
      "test",
    );
    expect(await manager.start({ run_id: "done", workspace_id: "ws-test", kind: "train", files: files(), resume: false })).toMatchObject({ ok: true });
    await manager.stop("done");
    expect(await manager.start({ run_id: "live", workspace_id: "ws-test", kind: "train", files: files(), resume: false })).toMatchObject({ ok: true });

    manager.logToActiveRuns("warn", "engine restarted: engine killed by SIGKILL — likely out of memory");

    const logs = (runId: string) => events.events(runId).filter((e) => e.type === "run.log").map((e) => e.payload);
    expect(logs("live")).toContainEqual({ level: "warn", message: "engine restarted: engine killed by SIGKILL — likely out of memory" });
    expect(logs("done").some((p) => p.message.startsWith("engine restarted"))).toBe(false);
    await manager.stop("live");
    events.close();
  });
});
