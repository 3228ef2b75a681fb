import { describe, expect, it } from "vitest";
import type { RunnerStatus } from "@contracts";
import { waitForEngine } from "./ready";

const status = (state: RunnerStatus["engine"]["state"]): RunnerStatus => ({
  runner: "local",
  engine: { state, restarts: 0, health: null, last_restart: null },
  runs: [],
});

describe("waitForEngine", () => {
  it("resolves only once the runner answers with its engine ready, and says why it waits meanwhile", async () => {
    const answers: (RunnerStatus | Error)[] = [new Error("connect ECONNREFUSED"), status("starting"), status("starting"), status("ready")];
    let calls = 0;
    const logs: string[] = [];
    await waitForEngine({
      runner: {
        name: "local",
        url: "http://127.0.0.1:1",
        status: async () => {
          const a = answers[Math.min(calls++, answers.length - 1)]!;
          if (a instanceof Error) throw a;
          return a;
        },
      },
      log: (m) => logs.push(m),
      pollMs: 1,
    });
    expect(calls).toBe(4);
    expect(logs).toEqual([
      expect.stringMatching(/runner 'local' at http:\/\/127\.0\.0\.1:1 is not answering yet \(connect ECONNREFUSED\)/),
      expect.stringMatching(/engine is starting \(loading the model\)/),
    ]);
  });

  it("keeps waiting while the engine failed, naming why, and stops when aborted", async () => {
    const ctl = new AbortController();
    const logs: string[] = [];
    const failed: RunnerStatus = { ...status("failed"), engine: { ...status("failed").engine, last_restart: { at: 0, reason: "out of memory" } } };
    setTimeout(() => ctl.abort(new Error("shutting down")), 30);
    await expect(
      waitForEngine({ runner: { name: "local", url: "u", status: async () => failed }, log: (m) => logs.push(m), pollMs: 1, signal: ctl.signal }),
    ).rejects.toThrow("shutting down");
    expect(logs[0]).toMatch(/engine failed: out of memory/);
  });
});
