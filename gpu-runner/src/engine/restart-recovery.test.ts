import { describe, expect, it } from "vitest";
import { EngineError } from "./client";
import { type EngineWatch, isConnectionCut, isTransportFailure, restartCause, restartSince } from "./restart-recovery";

/** A supervisor as restartSince sees it: `restarts` and `up` change as the test says. */
function watch(state: { restarts: number; up: boolean; restarting: boolean }): EngineWatch & { readyCalls: number } {
  const w = {
    readyCalls: 0,
    restarts: () => state.restarts,
    lastRestart: () => (state.restarts > 0 ? { at: 1, reason: "engine killed by SIGKILL, likely out of memory", cause: "engine killed by SIGKILL, likely out of memory" } : null),
    restarting: () => state.restarting,
    probe: () => (state.up ? Promise.resolve() : Promise.reject(new Error("refused"))),
    waitReady: async () => {
      w.readyCalls++;
      state.up = true;
      state.restarting = false;
    },
  };
  return w;
}

describe("restartSince", () => {
  const signal = new AbortController().signal;

  it("is null when the engine kept answering (the failure was not a restart: no retry)", async () => {
    expect(await restartSince(watch({ restarts: 0, up: true, restarting: false }), 0, signal)).toBeNull();
  });

  it("is the restart that began after the call, once the engine is ready again", async () => {
    const w = watch({ restarts: 1, up: false, restarting: true });
    expect(await restartSince(w, 0, signal)).toMatchObject({ reason: /SIGKILL/ });
    expect(w.readyCalls).toBe(1);
  });

  it("is the restart already under way when the call began (the call failed for it too)", async () => {
    const w = watch({ restarts: 1, up: false, restarting: true });
    expect(await restartSince(w, 1, signal)).toMatchObject({ reason: /SIGKILL/ });
  });

  it("waits for the supervisor to notice a dead engine, then reports its restart", async () => {
    const state = { restarts: 0, up: false, restarting: false };
    setTimeout(() => Object.assign(state, { restarts: 1, restarting: true }), 600);
    expect(await restartSince(watch(state), 0, signal)).toMatchObject({ reason: /SIGKILL/ });
  });

  it("stops waiting when the run is stopped", async () => {
    const controller = new AbortController();
    const pending = restartSince(watch({ restarts: 0, up: false, restarting: false }), 0, controller.signal);
    controller.abort(new Error("stopped"));
    await expect(pending).rejects.toThrow("stopped");
  });
});

describe("what an engine restart can explain", () => {
  it("a lost connection or a 5xx, never a 4xx that names the request", () => {
    expect(isTransportFailure(new EngineError("engine unreachable at http://127.0.0.1:1/v1: fetch failed"))).toBe(true);
    expect(isTransportFailure(new TypeError("terminated"))).toBe(true);
    expect(isTransportFailure(new EngineError("engine /train → 503: restarting", 503))).toBe(true);
    expect(isTransportFailure(new EngineError("engine /train → 409: step out of order", 409))).toBe(false);
    expect(isTransportFailure(new Error("training step 2 failed: loss is NaN"))).toBe(false);
  });

  it("a cut connection is worth one more try without a restart; an answer from the engine (4xx or 5xx) is not", () => {
    expect(isConnectionCut(new EngineError("engine unreachable at http://127.0.0.1:1/v1/chat/completions: fetch failed (read ECONNRESET)"))).toBe(true);
    expect(isConnectionCut(new TypeError("terminated"))).toBe(true);
    expect(isConnectionCut(new Error("other side closed"))).toBe(true);
    expect(isConnectionCut(new EngineError("engine /v1/chat/completions → 503: overloaded", 503))).toBe(false);
    expect(isConnectionCut(new EngineError("engine /v1/chat/completions → 400: messages: empty", 400))).toBe(false);
    expect(isConnectionCut(new Error("the scenario threw"))).toBe(false);
  });

  it("reads as the issue's operators would search for it, without the engine's memory or output (every workspace's runs read it)", () => {
    const restart = { at: 0, reason: "engine killed by SIGKILL, likely out of memory — RSS was 3.1 GB at the last health check; last output: a prompt", cause: "engine killed by SIGKILL, likely out of memory" };
    expect(restartCause(restart)).toBe("engine restarted: killed by SIGKILL, likely out of memory");
  });
});
