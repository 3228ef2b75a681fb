/**
 * The watchdog's CPU limit counts CPU, not time spent inside the isolate. A thread blocked in the isolate
 * without using a core stands in, deterministically, for a thread the OS starves on a loaded machine: both
 * read as isolated-vm `cpuTime` while the process gets no CPU. (The sandbox removes Atomics from user code;
 * this bare isolate keeps it to block.)
 */
import ivm from "isolated-vm";
import { afterEach, describe, expect, it } from "vitest";
import { LimitsConfig } from "../../../contracts";
import { Watchdog } from "./watchdog";

const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 10_000, cpu_timeout_ms: 300, memory_mb: 32 });
const open: { isolate: ivm.Isolate; watchdog: Watchdog }[] = [];

async function runUnderWatchdog(code: string) {
  const isolate = new ivm.Isolate({ memoryLimit: LIMITS.memory_mb });
  const watchdog = new Watchdog(isolate, LIMITS);
  open.push({ isolate, watchdog });
  const context = await isolate.createContext();
  const script = await isolate.compileScript(code);
  watchdog.startPhase();
  const cpuBefore = isolate.cpuTime;
  const result = await watchdog.guard(script.run(context)).then(
    () => "returned",
    (err: unknown) => (err instanceof Error ? err.message : String(err)),
  );
  return { result, reason: watchdog.reason, isolateMs: isolate.isDisposed ? null : Number(isolate.cpuTime - cpuBefore) / 1e6 };
}

afterEach(() => {
  for (const { isolate, watchdog } of open.splice(0)) {
    watchdog.dispose();
    if (!isolate.isDisposed) isolate.dispose();
  }
});

describe("Watchdog CPU limit", () => {
  it("does not count time the isolate's thread spends without a core", async () => {
    const r = await runUnderWatchdog("Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000); 1");
    expect(r.result).toBe("returned");
    expect(r.reason).toBeNull();
    // isolated-vm itself counted the second as "CPU time": the case the watchdog must not stop.
    expect(r.isolateMs).toBeGreaterThan(LIMITS.cpu_timeout_ms * 2);
  });

  it("stops a busy loop once it has used the limit's CPU", async () => {
    const started = performance.now();
    const r = await runUnderWatchdog("for (;;) {}");
    expect(r.reason).toBe("cpu");
    expect(r.result).toBe("rollout stopped: cpu");
    expect(performance.now() - started).toBeLessThan(LIMITS.rollout_timeout_ms);
  });
});
