/**
 * Issue 16, finding 7 ("one rollout starves the others"), tried as it was found, on a REAL runner with its
 * REAL engine (CPU, SmolLM2-135M) and real sandboxes. The engine runs with a batch capacity of 1
 * (ROLLBOOK_MAX_BATCH=1), so every model call beyond one waits for a slot — the crowded engine of the
 * finding, made certain on any machine:
 *
 * - a rollout calling ctx.chat in four tight loops beside normal sibling rollouts: every sibling completes
 *   with a reward (none times out), and the looper is ended by its own limit, having been answered;
 * - a run started while another run's long model call holds the engine: its rollouts wait longer than their
 *   whole wall-clock limit for a slot, and none is failed for it — each records the wait (timings.queued_ms).
 *   Before the runner's fair queue and clock, the wait counted against the limit and every one timed out.
 *
 *   npx vitest run --project server server/security/fairness.servertest.ts
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv } from "../../gpu-runner/src/env";
import { startTestRunner, type TestRunner } from "../../gpu-runner/src/test-support/test-runner";
import { dryRun, fairnessFiles, trajectories, wordOf } from "../../bench/fairness-experiment";

const TOKEN = randomBytes(24).toString("hex");
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
const engineAvailable = Boolean(env0.ENGINE_URL) || fs.existsSync(env0.ENGINE_PYTHON);
if (!engineAvailable) console.warn(`fairness.servertest: skipped, no engine python at ${env0.ENGINE_PYTHON} (npm run setup)`);

/** Polls a state (not a fixed sleep); fails naming what it waited for. */
async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!engineAvailable)("fair share on a shared runner (real runner, real engine)", () => {
  let runner: TestRunner | undefined;
  /**
   * This machine's speed, measured by the first case: a normal rollout's own time, and the model's time per
   * sampled token at a batch of one. The second case sizes its limit and the other run's call from them, so
   * the wait is longer than the limit and the limit longer than the rollout's own time on any machine.
   */
  let ownMs = 3_000;
  let tokenMs = 100;

  beforeAll(async () => {
    const before = process.env.ROLLBOOK_MAX_BATCH;
    process.env.ROLLBOOK_MAX_BATCH = "1"; // the engine child inherits it: one call on the engine at a time
    try {
      runner = await startTestRunner({ name: "fairness", token: TOKEN, env: { ENGINE_URL: "" } });
    } finally {
      if (before === undefined) delete process.env.ROLLBOOK_MAX_BATCH;
      else process.env.ROLLBOOK_MAX_BATCH = before;
    }
    expect(runner.server.supervisor.status().health?.batch_capacity).toBe(1);
  }, 600_000);

  afterAll(() => runner?.close(), 60_000);

  it("a rollout calling ctx.chat in tight loops does not starve its siblings: every sibling completes with a reward", async () => {
    const r = runner as TestRunner;
    const words = ["apple", "river", "candle"];
    const events = await dryRun(r.client, "siblings", fairnessFiles({ words, looper: { tokens: 32, loops: 4 }, rolloutTimeoutMs: 30_000, maxTokens: 8 }));
    const all = trajectories(events);
    const normal = all.filter((t) => wordOf(t) !== "loop");
    expect(normal.map(wordOf).sort()).toEqual([...words].sort());
    for (const t of normal) {
      expect(t.error, `${wordOf(t)}: ${t.error?.message}`).toBeNull();
      expect(t.reward).toBe(1);
    }
    // The looper was answered too (fair share, not exclusion), until its own limit ended it.
    const looper = all.find((t) => wordOf(t) === "loop");
    expect(looper?.metrics.turns).toBeGreaterThan(0);
    ownMs = Math.max(...normal.map((t) => t.timings.duration_ms - (t.timings.queued_ms ?? 0)));
    const turns = looper?.turns ?? [];
    const sampled = turns.reduce((n, t) => n + t.completion_tokens, 0);
    if (sampled > 0) tokenMs = turns.reduce((n, t) => n + t.model_ms, 0) / sampled;
    expect(looper?.error).toMatchObject({ kind: "timeout", message: expect.stringMatching(/ran \d+\.\d s \(code and model\), waited \d+\.\d s for an engine slot/) });
  }, 600_000);

  it("does not fail a rollout whose wall clock expired only while it waited for an engine slot", async () => {
    const r = runner as TestRunner;
    // The limit: well above this rollout's own time here. The other run's calls: sized to take 2.5× the limit.
    const limitMs = Math.max(3_000, Math.ceil(2 * ownMs));
    const hogTokens = Math.min(900, Math.max(64, Math.ceil((2.5 * limitMs) / tokenMs)));
    // Another run's long calls hold the engine's one slot, one after another; that run never ends by itself.
    const hog = dryRun(r.client, "hog", fairnessFiles({ words: [], looper: { tokens: hogTokens, loops: 1 }, rolloutTimeoutMs: 3_600_000, maxTokens: 8 }));
    hog.catch(() => {});
    await until("the other run's call on the engine", () => r.server.slots.status().in_flight >= 1, 300_000);
    try {
      const events = await dryRun(r.client, "patient", fairnessFiles({ words: ["apple", "river"], rolloutTimeoutMs: limitMs, maxTokens: 8 }));
      const normal = trajectories(events);
      expect(normal).toHaveLength(2);
      console.log(`fairness: own time ${ownMs} ms, ${tokenMs.toFixed(1)} ms/token; limit ${limitMs} ms, other run's calls ${hogTokens} tokens; ` +
        normal.map((t) => `${wordOf(t)} ${t.timings.duration_ms} ms (queued ${t.timings.queued_ms} ms)`).join(", "));
      for (const t of normal) {
        expect(t.error, `${wordOf(t)}: ${t.error?.message}`).toBeNull();
        expect(t.reward).toBe(1);
        expect(t.timings.queued_ms).toBeGreaterThan(0);
      }
      // At least the first waited out a long call: longer in all than its limit, which only its own time counts.
      const longest = Math.max(...normal.map((t) => t.timings.duration_ms));
      const waited = normal.find((t) => t.timings.duration_ms === longest);
      expect(longest).toBeGreaterThan(limitMs);
      expect(longest - (waited?.timings.queued_ms ?? 0)).toBeLessThan(limitMs);
    } finally {
      await r.client.stop.mutate({ run_id: "hog" });
      await hog;
    }
  }, 600_000);
});
