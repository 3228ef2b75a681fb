/**
 * A seed reproduces a run: the same experiment, config and seed give the same run, on a quiet machine and
 * beside a CPU hog. Two runs of say-the-word (3 GRPO steps, 2 groups × 4 rollouts, different run ids, the
 * same seed) on the real runner and engine: the second one with two busy-looping processes beside it, so
 * its rollouts reach the engine at other moments and share batches with other rows. Every rollout's reply
 * and reward, every step's mean reward and loss must be identical.
 *
 * What it holds: sampling seeds derive from the seed and the call's coordinates, not the run id
 * (gpu-runner/src/rollout/seed.ts); the engine's lean decode is batch-invariant (ROLLBOOK_BATCH_INVARIANT,
 * backends/decode_llama.py); groups and the trainer's order follow the tasks, not arrival. The rollout
 * timeout is long, so no rollout starves under the hog (a starved rollout is where two runs can still
 * differ, said by the runner_faults flag).
 *   npx vitest run --project server gpu-runner/src/loop/seed-reproduces.servertest.ts
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExperimentFiles, RunEvent } from "../../../contracts";
import { collectRunEvents } from "../../../server/test/collect-run-events";
import { REPO_ROOT } from "../env";
import { startTestRunner, type TestRunner } from "../test-support/test-runner";

const TOKEN = "seed-reproduces-token-0123456789";

function experiment(): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const config = {
    ...(JSON.parse(read("config.json")) as Record<string, unknown>),
    seed: 7,
    num_steps: 3,
    groups_per_step: 2,
    rollouts_per_group: 4,
    eval_every: 0,
    sampling: { temperature: 1.0, max_tokens: 12 },
    limits: { rollout_timeout_ms: 600_000 },
  };
  return { "scenario.ts": read("scenario.ts"), "reward.ts": read("reward.ts"), "tasks.jsonl": read("tasks.jsonl"), "config.json": JSON.stringify(config) };
}

/** What must not differ between the two runs, keyed by the rollout's coordinates (not its run's id). */
function fingerprint(events: RunEvent[]) {
  const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
  const byPlace = Object.fromEntries(
    rollouts.map((r) => [`${r.split} ${r.id.slice(r.id.indexOf(":"))}`, { reply: r.messages.at(-1)?.content, reward: r.reward, error: r.error?.kind ?? null }]),
  );
  const steps = events.flatMap((e) => (e.type === "step.finished" ? [{ step: e.payload.step, reward: e.payload.reward_mean, loss: e.payload.trainer?.loss }] : []));
  return { rollouts: byPlace, steps };
}

function cpuHogs(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
}

describe("the same seed, the same run", () => {
  let runner: TestRunner | undefined;
  beforeAll(async () => {
    runner = await startTestRunner({ name: "seed-reproduces", token: TOKEN, engine: "shared" });
  }, 600_000);
  afterAll(() => runner?.close(), 60_000);

  async function train(runId: string) {
    const { client, server } = runner!;
    expect(await client.start.mutate({ run_id: runId, workspace_id: "ws-seed", kind: "train", files: experiment(), resume: false })).toMatchObject({ ok: true });
    const events = await collectRunEvents(server.url, TOKEN, runId, 560_000);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
    return fingerprint(events);
  }

  it("gives identical rollouts, rewards and losses on a quiet machine and beside a CPU hog", async () => {
    const quiet = await train(`seed-quiet-${Date.now()}`);
    expect(Object.keys(quiet.rollouts)).toHaveLength(3 * 2 * 4);
    expect(quiet.steps.map((s) => s.step)).toEqual([1, 2, 3]);
    const hogs = cpuHogs(2);
    let loaded;
    try {
      loaded = await train(`seed-loaded-${Date.now()}`);
    } finally {
      for (const h of hogs) h.kill("SIGKILL");
    }
    expect(loaded.rollouts).toEqual(quiet.rollouts);
    expect(loaded.steps).toEqual(quiet.steps);
    // Not a run that learned nothing and so trivially matched: the replies vary and the trainer trained.
    expect(new Set(Object.values(quiet.rollouts).map((r) => r.reply)).size).toBeGreaterThan(2);
    expect(quiet.steps.some((s) => s.loss !== 0 && s.loss !== undefined)).toBe(true);
  }, 1_200_000);
});
