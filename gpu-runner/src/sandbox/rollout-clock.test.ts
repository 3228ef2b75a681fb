/**
 * A rollout's wall-clock limit counts its own time, not time queued for an engine slot. The timer itself
 * with a hand-driven clock; then real sandboxes (isolated-vm in a sandbox process, the watchdog there and
 * the runner's backstop) whose ctx.chat waits in a real FairQueue behind a call the test holds open.
 *   npx vitest run --project unit gpu-runner/src/sandbox/rollout-clock.test.ts
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { LimitsConfig } from "../../../contracts";
import type { ChatResult } from "../../../contracts/sdk/rollbook";
import { compileExperiment } from "../experiment/compile";
import { FairQueue } from "../engine/fair-queue";
import { PausableTimer } from "./pausable-timer";
import { RolloutClock } from "./rollout-clock";
import { type RolloutHost, runRollout } from "./run-rollout";

describe("PausableTimer", () => {
  afterEach(() => vi.useRealTimers());

  it("fires after its time of running, not of real time", () => {
    vi.useFakeTimers();
    let now = 0;
    const fired = vi.fn();
    const timer = new PausableTimer(1_000, fired, () => now);
    const advance = (ms: number) => {
      now += ms;
      vi.advanceTimersByTime(ms);
    };
    advance(400);
    timer.pause();
    advance(5_000); // waiting: not counted
    expect(fired).not.toHaveBeenCalled();
    timer.resume();
    advance(599);
    expect(fired).not.toHaveBeenCalled();
    expect(timer.elapsed()).toBe(999);
    advance(2);
    expect(fired).toHaveBeenCalledOnce();
    timer.clear();
  });
});

const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 1_000, cpu_timeout_ms: 500, memory_mb: 32 });
const SCENARIO = `import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext) {
  const reply = await ctx.chat([{ role: "user", content: "hi" }]);
  return reply.content;
}
`;
const REWARD = `export default function reward({ output }: { output: unknown }) { return output === "ok" ? 1 : 0; }\n`;
const OK: ChatResult = { content: "ok", finishReason: "stop", toolCalls: [], malformedToolCalls: [], message: { role: "assistant", content: "ok" }, usage: { promptTokens: 1, completionTokens: 1 } };

async function compiled() {
  const r = await compileExperiment({ "scenario.ts": SCENARIO, "reward.ts": REWARD });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  return r.compiled;
}

/** Polls a condition on the clock (a state, not a fixed sleep); fails after `ms`. */
async function until(what: string, ok: () => boolean, ms = 30_000) {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A one-slot engine queue whose slot another run holds until the test lets go; the rollout's ctx.chat waits
 * behind it, then is answered by `serve` (default: "ok" at once).
 */
function crowdedEngine(clock: RolloutClock, serve: (signal: AbortSignal) => Promise<ChatResult> = async () => OK) {
  const queue = new FairQueue(() => 1);
  let letGo!: () => void;
  const held = queue.run({ runId: "other-run", rolloutId: "other", runCap: 1 }, () => new Promise<void>((r) => (letGo = r)));
  const host: RolloutHost = {
    chat: (_messages, _options, signal) => queue.run({ runId: "run", rolloutId: "run:s1:g0:r0", runCap: 4, clock, signal }, () => serve(signal)),
    judge: async () => ({ content: "", usage: { promptTokens: 0, completionTokens: 0, costUsd: 0 } }),
    mcpList: async () => [],
    mcpCall: async () => ({ text: "", isError: false }),
  };
  return { host, letGo: () => letGo(), held };
}

const rollout = async (host: RolloutHost, clock: RolloutClock, limits = LIMITS) =>
  runRollout({ compiled: await compiled(), task: {}, split: "train", step: 1, group: 0, rolloutIndex: 0, limits, host, mcpServers: [], getMessages: () => [], clock });

describe("a rollout's wall clock and the engine queue", () => {
  it("does not fail a rollout that waited past its limit for an engine slot, and records the wait", async () => {
    const clock = new RolloutClock();
    const engine = crowdedEngine(clock);
    const done = rollout(engine.host, clock);
    // Queued for twice its wall-clock limit, then the slot frees and its call is answered at once.
    await until("2 s queued", () => clock.queuedMs() > 2 * LIMITS.rollout_timeout_ms);
    engine.letGo();
    const o = await done;
    expect(o.error).toBeNull();
    expect(o.reward).toBe(1);
    expect(o.queuedMs).toBeGreaterThan(2 * LIMITS.rollout_timeout_ms);
    expect(o.durationMs).toBeGreaterThan(o.queuedMs);
  });

  it("stops a rollout whose own time ran out, saying how long it ran and how long it waited", async () => {
    const clock = new RolloutClock();
    // Once served, the model never answers: its own time runs to the limit.
    const engine = crowdedEngine(clock, () => new Promise<ChatResult>(() => {}));
    const done = rollout(engine.host, clock);
    await until("0.5 s queued", () => clock.queuedMs() > 500);
    engine.letGo();
    const o = await done;
    expect(o.error?.kind).toBe("timeout");
    const m = /^wall-clock timeout: limit of 1\.0 s reached \(limits\.rollout_timeout_ms\): ran (\d+\.\d) s \(code and model\), waited (\d+\.\d) s for an engine slot$/.exec(o.error?.message ?? "");
    expect(m, o.error?.message).not.toBeNull();
    expect(Number(m?.[1])).toBeGreaterThanOrEqual(1.0);
    expect(Number(m?.[2])).toBeGreaterThanOrEqual(0.5);
    expect(o.durationMs).toBeGreaterThan(LIMITS.rollout_timeout_ms + 500);
  });

  it("stops a rollout that never gets a slot after 3x its limit of real time", async () => {
    const clock = new RolloutClock();
    const engine = crowdedEngine(clock); // never let go
    const o = await rollout(engine.host, clock, { ...LIMITS, rollout_timeout_ms: 400 });
    expect(o.error?.kind).toBe("timeout");
    const m = /^wall-clock timeout: stopped after (\d+\.\d) s of real time \(3× limits\.rollout_timeout_ms of 0\.4 s, .*\): ran (\d+\.\d) s \(code and model\), waited (\d+\.\d) s for an engine slot$/.exec(o.error?.message ?? "");
    expect(m, o.error?.message).not.toBeNull();
    expect(Number(m?.[1])).toBeGreaterThanOrEqual(1.2);
    expect(Number(m?.[2])).toBeLessThan(0.4); // its own time never reached the limit: only the backstop ended it
    expect(o.durationMs).toBeGreaterThanOrEqual(1_200);
    engine.letGo();
  });
});
