/**
 * The Tinker door on real parts: the REAL `tinker` SDK 0.38.0 (its venv: scripts/tinker-venv.sh) against
 * /api/tinker served by the route's handler, the REAL runner (in this process) with its REAL engine
 * (SmolLM2-135M on CPU) and a fresh Postgres.
 *
 *   - examples/tinker/rl_loop.py (tinker-cookbook's rl_loop.py shape: save_weights_and_get_sampling_client,
 *     groups sampled per prompt, centred advantages, importance_sampling datums, optim_step) runs unmodified:
 *     the model is a run of kind tinker with one step per optim_step carrying the trainer's numbers, every
 *     sampled sequence is a rollout (text and token counts), the datums are linked to their samples
 *     (advantage on the rollout), the sampler saves are checkpoints `<run>@<step>`, probs_corr near 1;
 *   - examples/tinker/sl_loop.py (sl_loop.py's shape, cross_entropy) lowers its loss, and save_state /
 *     load_state round-trip: a second model loaded from the state has the same loss on the batch;
 *   - both load their tokenizer with the SDK's get_tokenizer() from Rollbook's tokenizer hub (HF_ENDPOINT), into
 *     an empty HF cache: the engine's tokenizer, bytes equal to the model folder's;
 *   - another workspace's token cannot see or train the model; refusals name the field.
 *   npx vitest run --project server features/tinker/server/tinker-sdk.servertest.ts
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { createApiToken } from "@/features/workspace/server";
import { newWorkspace, userWithRole } from "@/server/test/harness";
import { startArtStack, type ArtStack } from "@/server/test/art-stack";

const TOKEN = "tinker-sdk-servertest-token-0123456789";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`tinker-sdk.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);
const MODEL = "SmolLM2-135M-Instruct";
const ROOT = path.resolve(import.meta.dirname, "../../..");
const MODEL_DIR = path.join(process.env.ROLLBOOK_MODEL_CACHE ?? path.join(os.homedir(), ".cache/rollbook/models"), MODEL);
const exec = promisify(execFile);

let stack: ArtStack | undefined;
const db = () => stack!.tdb.handle.prisma;

async function tinkerPython(): Promise<string> {
  const venv = await exec("bash", [path.join(ROOT, "scripts/tinker-venv.sh")], { timeout: 20 * 60_000, maxBuffer: 10 * 1024 * 1024 });
  return venv.stdout.trim().split("\n").at(-1)!;
}

async function runExample(script: string, env: Record<string, string>): Promise<{ lines: Record<string, unknown>[]; last: Record<string, unknown> }> {
  const { stdout } = await exec(await tinkerPython(), [path.join(ROOT, "examples/tinker", script)], {
    timeout: 900_000,
    maxBuffer: 10 * 1024 * 1024,
    // get_tokenizer() through Rollbook's tokenizer hub, into an empty HF cache: the engine's own tokenizer, no hub.
    env: { ...process.env, ROLLBOOK_URL: stack!.webUrl, ROLLBOOK_API_KEY: stack!.apiKey, BASE_MODEL: MODEL, HF_ENDPOINT: `${stack!.webUrl}/api/tinker/hf`, HF_TOKEN: stack!.apiKey, HF_HOME: fs.mkdtempSync(path.join(os.tmpdir(), "tinker-hf-")), HF_HUB_OFFLINE: "0", ...env },
  });
  const lines = stdout.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { lines, last: lines.at(-1)! };
}

describe.skipIf(!engineAvailable)("the Tinker door with the real tinker SDK (real runner, real engine)", () => {
  beforeAll(async () => {
    stack = await startArtStack({ name: "tinker-sdk", runnerToken: TOKEN });
  }, 300_000);
  afterAll(async () => {
    await stack?.close();
  });

  it("rl_loop.py trains: a tinker run whose steps, rollouts, links and checkpoints are the loop's", async () => {
    const steps = 3;
    const { lines, last } = await runExample("rl_loop.py", { STEPS: String(steps), GROUPS: "2", GROUP_SIZE: "4", SEED: "7", LR: "1e-3" });
    expect(lines.filter((l) => "datums" in l)).toHaveLength(steps);
    const runId = last.model_id as string;
    const run = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { kind: true, status: true, currentStep: true, workspaceId: true } });
    expect(run).toMatchObject({ kind: "tinker", status: "running", currentStep: steps, workspaceId: stack!.workspaceId });
    // What the LoRA covers is said on the run (train_unembed, which the SDK asks by default, is not applied).
    const logs = await db().runEvent.findMany({ where: { runId, type: "run.log" }, select: { payload: true } });
    expect(logs.map((l) => (l.payload as { message: string }).message).join("\n")).toMatch(/LoRA rank 8 on every attention and MLP projection.*train_unembed=true/);
    // Every sampled sequence is a rollout of the step it was sampled for (2 prompts × 4 samples a step).
    const rollouts = await db().trajectory.findMany({ where: { runId }, select: { step: true, model: true, metrics: true } });
    expect(rollouts).toHaveLength(steps * 2 * 4);
    for (let s = 1; s <= steps; s++) expect(rollouts.filter((r) => r.step === s)).toHaveLength(8);
    // Step 1 sampled the base model (nothing trained yet), later steps the previous step's checkpoint.
    expect(new Set(rollouts.filter((r) => r.step === 1).map((r) => r.model))).toEqual(new Set([MODEL]));
    expect(new Set(rollouts.filter((r) => r.step === 3).map((r) => r.model))).toEqual(new Set([`${runId}@2`]));
    // Each sample's tokens are in the run's token log on the runner (the token view): prompt mask 0, sampled mask 1.
    const log = await fetch(`${stack!.runner.server.url}/runs/${runId}/tokens.jsonl`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(log.status).toBe(200);
    const lines2 = (await log.text()).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { trajectory_id: string; sequences: { tokens: number[]; mask: number[]; logprobs: number[] }[] });
    const stored = await db().trajectory.findMany({ where: { runId }, select: { id: true, tokens: true } });
    expect(new Set(lines2.map((l) => l.trajectory_id))).toEqual(new Set(stored.map((t) => t.id)));
    for (const t of stored) {
      const seq = lines2.find((l) => l.trajectory_id === t.id)!.sequences[0]!;
      const counts = t.tokens as { prompt: number; completion: number };
      expect(seq.mask.filter((x) => x === 1)).toHaveLength(counts.completion);
      expect(seq.tokens).toHaveLength(counts.prompt + counts.completion);
    }
    // Datums of groups that trained were linked to their samples: each such rollout carries its advantage.
    const trainedDatums = lines.reduce((n, l) => n + ((l.datums as number | undefined) ?? 0), 0);
    const linked = rollouts.filter((r) => typeof (r.metrics as Record<string, unknown>).advantage === "number");
    expect(linked).toHaveLength(trainedDatums);
    // One step per optim_step, with the trainer's figures; sampler and trainer agree on the sampled tokens.
    const stepRows = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true, metrics: true } });
    expect(stepRows.map((s) => s.step)).toEqual([1, 2, 3]);
    for (const s of stepRows) {
      const trainer = (s.metrics as { trainer: { trained_tokens: number; probs_corr: number; grad_norm: number } | null }).trainer;
      expect(trainer).not.toBeNull();
      if (trainer!.trained_tokens > 0) {
        expect(trainer!.grad_norm).toBeGreaterThan(0);
        expect(trainer!.probs_corr).toBeGreaterThan(0.98);
      }
    }
    // save_weights_and_get_sampling_client after steps 1 and 2 saved them as the run's checkpoints.
    const ckpts = await db().checkpoint.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(ckpts.map((c) => c.step)).toEqual([1, 2]);
    // compute_logprobs (a forward pass) gives the sampler's logprobs of its own tokens, and is not a rollout.
    expect(last.logprob_drift as number).toBeLessThan(1e-3);
  }, 900_000);

  it("sl_loop.py lowers its loss, and save_state / load_state round-trip the weights", async () => {
    const { last } = await runExample("sl_loop.py", { STEPS: "6", LR: "2e-3" });
    const losses = last.loss as number[];
    expect(losses).toHaveLength(6);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.8);
    // The resumed model's forward loss equals the saved one's (same weights; fp32 on CPU).
    expect(Math.abs((last.resumed_loss as number) - (last.after as number))).toBeLessThan(1e-4);
    expect(last.state_path).toBe(`tinker://${last.model_id as string}/weights/final`);
    const resumed = await db().run.findUniqueOrThrow({ where: { id: last.resumed_model_id as string }, select: { kind: true } });
    expect(resumed.kind).toBe("tinker");
    // create_training_client_from_state_with_optimizer: a model made by the load, called by the SDK's own id.
    expect(Math.abs((last.restored_loss as number) - (last.after as number))).toBeLessThan(1e-4);
    expect(last.restored_model_id as string).toMatch(/^tses_[0-9a-f]+:train:\d+$/);
    const restored = await db().run.findFirstOrThrow({ where: { kind: "tinker", artClient: { path: ["modelId"], equals: last.restored_model_id as string } }, select: { workspaceId: true } });
    expect(restored.workspaceId).toBe(stack!.workspaceId);
  }, 900_000);

  it("another workspace's token sees no model, and refusals name the field", async () => {
    const run = await db().run.findFirstOrThrow({ where: { kind: "tinker", workspaceId: stack!.workspaceId }, select: { id: true } });
    const other = await newWorkspace(db());
    const otherKey = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "other" })).token;
    const post = (route: string, body: unknown, key = stack!.apiKey) =>
      fetch(`${stack!.webUrl}/api/tinker/api/v1/${route}`, { method: "POST", headers: { "x-api-key": `tml-${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const info = await post("get_info", { model_id: run.id, type: "get_info" }, otherKey);
    expect(info.status).toBe(404);
    expect(((await info.json()) as { field: string }).field).toBe("model_id");
    const optim = await post("optim_step", { model_id: run.id, adam_params: { learning_rate: 1e-3 }, type: "optim_step" }, otherKey);
    expect(optim.status).toBe(400);
    expect(await optim.text()).toContain("model_id");
    // Another workspace's weights path is unknown, as is one that is not a Tinker path at all.
    for (const model_path of [`tinker://${run.id}/sampler_weights/x`, "tinker://../../etc/passwd/weights/x", "file:///etc/passwd"]) {
      const res = await post("create_sampling_session", { session_id: "tses_x", sampling_session_seq_id: 0, model_path, type: "create_sampling_session" }, otherKey);
      expect(res.status, model_path).toBe(400);
      expect(await res.text()).toContain("model_path");
    }
    // The tokenizer hub: the engine's files for a served base model, nothing else, and only with a token.
    const hub = (p: string, key: string | null = stack!.apiKey, method = "GET") => fetch(`${stack!.webUrl}/api/tinker/hf/${p}`, { method, headers: key ? { authorization: `Bearer ${key}` } : {} });
    const served = await hub(`${MODEL}/resolve/main/tokenizer.json`);
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(fs.readFileSync(path.join(MODEL_DIR, "tokenizer.json")))).toBe(true);
    const head = await hub(`${MODEL}/resolve/main/tokenizer.json`, stack!.apiKey, "HEAD");
    expect(head.headers.get("x-repo-commit")).toMatch(/^[0-9a-f]{40}$/);
    expect(Number(head.headers.get("x-linked-size"))).toBeGreaterThan(1000);
    for (const p of [`${MODEL}/resolve/main/model.safetensors`, `${MODEL}/resolve/main/..%2F..%2Fengine-token`, `${MODEL}/resolve/main/a%2Fb`, `${run.id}@1/resolve/main/tokenizer.json`, "other-model/resolve/main/tokenizer.json", `api/models/${MODEL}`]) {
      const res = await hub(p);
      expect(res.status, p).toBe(404);
      expect(res.headers.get("x-error-code"), p).toMatch(/NotFound/);
    }
    expect((await hub(`${MODEL}/resolve/main/tokenizer.json`, null)).status).toBe(401);
    // No key, or a wrong one: 401.
    expect((await fetch(`${stack!.webUrl}/api/tinker/api/v1/get_server_capabilities`)).status).toBe(401);
  }, 120_000);
});
