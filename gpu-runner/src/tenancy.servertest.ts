/**
 * Many runs on one engine, end to end: three real train runs started at once on one runner and its one real
 * engine (CPU, SmolLM2-135M) whose adapter memory budget (ROLLBOOK_ADAPTER_MEMORY_MB) holds ONE run's
 * training state. All three must complete with their own checkpoints, and the engine's ledger must never
 * have gone over the budget (its peak, read from GET /tenants).
 *   npx vitest run --project server gpu-runner/src/tenancy.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExperimentFiles, type RunEvent } from "../../contracts";
import type { RunnerClient } from "./client";
import { loadEnv, REPO_ROOT } from "./env";
import { startTestRunner, type TestRunner } from "./test-support/test-runner";

const TOKEN = "tenancy-servertest-token-0123456789";
const ENGINE_TOKEN = "tenancy-engine-token-0123456789";
// A rank-8 LoRA on all seven projections of SmolLM2-135M is 2.44M fp32 parameters: with a gradient and
// AdamW's two moments ~39 MB. 50 MB holds one such state (plus one served checkpoint), never two.
const BUDGET_MB = 50;
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
const engineAvailable = !env0.ENGINE_URL && fs.existsSync(env0.ENGINE_PYTHON);

function files(config: Record<string, unknown>): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const base = JSON.parse(read("config.json")) as Record<string, unknown>;
  return {
    "scenario.ts": read("scenario.ts"),
    "reward.ts": read("reward.ts"),
    "tasks.jsonl": read("tasks.jsonl"),
    "config.json": JSON.stringify({ ...base, ...config }, null, 2),
  };
}

function collect(client: RunnerClient, runId: string) {
  return new Promise<RunEvent[]>((resolve, reject) => {
    const events: RunEvent[] = [];
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`events of ${runId} did not end; got ${events.length}`));
    }, 900_000);
    const sub = client.events.subscribe({ run_id: runId }, {
      onData: (tracked) => events.push(tracked.data as RunEvent),
      onComplete: () => {
        clearTimeout(timer);
        resolve(events);
      },
      onError: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
  });
}

type Tenants = { budget_bytes: number; used_bytes: number; peak_bytes: number; evictions: { train: number; serve: number }; restores: { checkpoint: number; spill: number } };

describe.skipIf(!engineAvailable)("three runs on one engine under a one-run adapter budget", () => {
  let testRunner: TestRunner | undefined;
  let client: RunnerClient;
  let runsDir: string;
  let engineUrl: string;
  const saved = process.env.ROLLBOOK_ADAPTER_MEMORY_MB;

  beforeAll(async () => {
    // The engine inherits the runner's environment: this is how a deployment sets the budget too.
    process.env.ROLLBOOK_ADAPTER_MEMORY_MB = String(BUDGET_MB);
    testRunner = await startTestRunner({ name: "tenancy-servertest", token: TOKEN, env: { ENGINE_TOKEN } });
    ({ client, runsDir } = testRunner);
    engineUrl = testRunner.server.supervisor.client.baseUrl;
  }, 600_000);

  afterAll(async () => {
    await testRunner?.close();
    if (saved === undefined) delete process.env.ROLLBOOK_ADAPTER_MEMORY_MB;
    else process.env.ROLLBOOK_ADAPTER_MEMORY_MB = saved;
  }, 60_000);

  it("all three complete with their own checkpoints and the ledger stays within the budget", async () => {
    const config = {
      groups_per_step: 2, rollouts_per_group: 2, num_steps: 2, eval_every: 0,
      sampling: { temperature: 1.0, max_tokens: 8 },
      trainer: { learning_rate: 0.0002, loss: "ppo", micro_batch_size: 4 },
    };
    const ids = ["ten-a", "ten-b", "ten-c"];
    // Different seeds: three different runs, not one run three times.
    const started = await Promise.all(ids.map((run_id, i) =>
      client.start.mutate({ run_id, workspace_id: "ws-test", kind: "train", files: files({ ...config, seed: 100 + i }), resume: false })));
    for (const s of started) expect(s).toMatchObject({ ok: true });
    const all = await Promise.all(ids.map((id) => collect(client, id)));

    for (const [id, events] of ids.map((id, i) => [id, all[i] ?? []] as const)) {
      expect(events.at(-1), id).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
      expect(events.flatMap((e) => (e.type === "checkpoint.saved" ? [e.payload.step] : [])), id).toEqual([1, 2]);
      for (const step of [1, 2]) {
        const ckpt = path.join(runsDir, id, "checkpoints", String(step).padStart(4, "0"));
        const state = JSON.parse(fs.readFileSync(path.join(ckpt, "trainer_state.json"), "utf8")) as { run_id: string; step: number };
        expect(state).toMatchObject({ run_id: id, step });
      }
    }
    // Each run's adapter is its own: the three step-2 adapters differ.
    const weights = new Set(ids.map((id) => fs.readFileSync(path.join(runsDir, id, "checkpoints/0002/adapter_model.safetensors")).toString("base64")));
    expect(weights.size).toBe(ids.length);

    const res = await fetch(`${engineUrl}/tenants`, { headers: { authorization: `Bearer ${ENGINE_TOKEN}` } });
    expect(res.status).toBe(200);
    const tenants = (await res.json()) as Tenants;
    console.log(`engine ledger after three concurrent runs: ${JSON.stringify({ ...tenants, resident: undefined })}`);
    expect(tenants.budget_bytes).toBe(BUDGET_MB * 1024 * 1024);
    expect(tenants.peak_bytes).toBeLessThanOrEqual(tenants.budget_bytes);
    expect(tenants.peak_bytes).toBeGreaterThan(30 * 1024 * 1024); // a training state was really resident
    expect(tenants.evictions.train).toBeGreaterThanOrEqual(2); // three runs through a one-run budget
    expect(tenants.restores.checkpoint).toBeGreaterThanOrEqual(1);
  }, 900_000);
});
