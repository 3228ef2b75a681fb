/**
 * The runner's status() as the web server receives it (through the output schema), from a stand-in manager:
 * the engine's health decides the device and the notices.
 */
import { describe, expect, it } from "vitest";
import type { RunnerStatus } from "../../contracts";
import { SLOW_SAMPLING } from "./engine/backend-notice";
import { runnerRouter } from "./router";
import type { RunnerContext } from "./trpc";

function callerWith(health: unknown) {
  const status: RunnerStatus = { runner: "gpu-1", engine: { state: "ready", restarts: 0, health }, runs: [], disk_error: null };
  const manager = { status: () => status } as unknown as RunnerContext["manager"];
  return runnerRouter.createCaller({ manager, authorized: true, pool: { models: ["m"], capacity: 2, cpu_share: { mode: "off" } } });
}

describe("runner status()", () => {
  it("carries the slow-sampling notice for a CUDA engine on transformers", async () => {
    const status = await callerWith({ status: "ok", backend: "transformers", device: "cuda:0", gpu_name: "NVIDIA H200" }).status();
    expect(status.device).toBe("cuda:0: NVIDIA H200");
    expect(status.notices).toEqual([{ kind: SLOW_SAMPLING, message: expect.stringContaining("ROLLBOOK_BACKEND=vllm bash scripts/setup.sh") }]);
  });

  it("carries none for vLLM, a CPU engine, or no health yet", async () => {
    expect((await callerWith({ status: "ok", backend: "vllm", device: "cuda:0" }).status()).notices).toEqual([]);
    expect((await callerWith({ status: "ok", backend: "transformers", device: "cpu" }).status()).notices).toEqual([]);
    expect((await callerWith(null).status()).notices).toEqual([]);
  });
});
