/**
 * Checkpoints end to end on real parts: the REAL runner (in this process) with its REAL engine (SmolLM2-135M
 * on CPU), one 1-step train run of say-the-word started through the web API, its events ingested into a
 * fresh Postgres, and the web's HTTP handlers (download, /v1/chat/completions, /v1/models) on a node HTTP
 * server of their own. What a user does with a checkpoint is what is checked:
 *   - the list (size, rewards, model name), only in the run's workspace
 *   - the download untars to a folder that plain `PeftModel.from_pretrained` loads, tensor for tensor
 *   - the official `openai` npm client chats with the checkpoint (plain and streamed) with an API token;
 *     a wrong or revoked token is 401, another workspace's token gets 404 for the model
 *   npx vitest run --project server features/checkpoints/server/checkpoints.servertest.ts
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import OpenAI from "openai";
import * as tar from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatCompletionChunk } from "@contracts";
import { loadEnv as loadRunnerEnv, REPO_ROOT } from "@/gpu-runner/src/env";
import type { RunnerServer } from "@/gpu-runner/src/server";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { handleCheckpointDownload } from "./checkpoint-download";
import { handleRunTrajectoriesJsonl } from "@/features/runs/server";
import { handleChatCompletions, handleModels } from "@/features/openai-api/server";
import { registerRunner } from "@/server/runner-client";
import { callerAs, callerFor, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "@/server/test/harness";
import { createApiToken, revokeApiToken } from "@/features/workspace/server";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { collectRunEvents } from "@/server/test/collect-run-events";
import { serveFetch } from "@/server/test/serve-fetch";

const TOKEN = "checkpoints-servertest-token-0123456789";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`checkpoints.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);
const MODEL = "SmolLM2-135M-Instruct";

let tdb: TestDb;
let testRunner: TestRunner | undefined;
let runner: RunnerServer;
let web: http.Server;
let webUrl: string;
const db = () => tdb.handle.prisma;

/** The route handlers as app/api mounts them, on a plain node server (Next is not needed to test them). */
function serveWeb(): Promise<http.Server> {
  return serveFetch(async (request, url) => {
    const download = /^\/api\/checkpoints\/([^/]+)\/([^/]+)\/download$/.exec(url.pathname);
    if (url.pathname === "/api/v1/chat/completions" && request.method === "POST") return handleChatCompletions(request, { db: db() });
    if (url.pathname === "/api/v1/models" && request.method === "GET") return handleModels(request, { db: db() });
    if (download) return handleCheckpointDownload(request, decodeURIComponent(download[1]!), decodeURIComponent(download[2]!), { db: db() });
    return new Response("no route", { status: 404 });
  });
}

const collect = (runId: string) => collectRunEvents(runner.url, TOKEN, runId);

describe.skipIf(!engineAvailable)("checkpoints (real runner, real engine, one 1-step train run)", () => {
  let ws: string;
  let other: string;
  let runId: string;
  let runNumber: number;
  let tokenA: string;
  let tokenB: string;
  let runnerName: string;

  beforeAll(async () => {
    tdb = await createTestDb();
    // Never ENGINE_URL's engine: it must write checkpoints into the runner's runs folder (the shared engine's
    // runs folder is its runners' too).
    testRunner = await startTestRunner({ name: "checkpoints-servertest", token: TOKEN, engine: "shared" });
    runner = testRunner.server;

    ws = await newWorkspace(db());
    other = await newWorkspace(db());
    runnerName = `ckpt-${ws}`;
    await registerRunner(db(), { name: runnerName, url: runner.url, token: TOKEN });
    const api = callerFor(db(), ws, runnerName);
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    // One step of 2 groups × 4 (say-the-word's rewards almost never tie, so GRPO moves the adapter), with
    // the run's eval of checkpoint 1 on the 8 validation tasks.
    const files = templateFiles({ num_steps: 1, groups_per_step: 2, rollouts_per_group: 4, eval_every: 1, sampling: { temperature: 1.0, max_tokens: 12 } });
    const started = await api.runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    runId = started.runId;
    const events = await collect(runId);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    await ingestEvents(db(), runId, events);
    runNumber = (await db().run.findUniqueOrThrow({ where: { id: runId }, select: { number: true } })).number;

    const owner = await userWithRole(db(), ws, "owner");
    tokenA = (await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "sdk" })).token;
    tokenB = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "other" })).token;
    web = await serveWeb();
    webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  }, 600_000);

  afterAll(async () => {
    await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("lists the checkpoint with its size, rewards and served name — in the run's workspace only", async () => {
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    const list = await viewer.checkpoints.list({ runId });
    expect(list).toMatchObject({ runId, runNumber, baseModel: MODEL });
    expect(list.items).toHaveLength(1);
    const item = list.items[0]!;
    expect(item).toMatchObject({ step: 1, model: `${runNumber}@1` });
    expect(item.sizeBytes).toBeGreaterThan(10_000); // adapter + optimizer state on the runner's disk
    expect(item.evalReward).toEqual(expect.any(Number)); // the run's eval of checkpoint 1
    expect(item.trainReward).toEqual(expect.any(Number));
    expect(item.createdAt).toBeInstanceOf(Date);
    await expect(callerFor(db(), other).checkpoints.list({ runId })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("exports the run's rollouts with their exact token ids and logprobs (tokens=1), as the runner recorded them", async () => {
    const req = new Request(`http://127.0.0.1/api/export/runs/${runId}/trajectories?tokens=1`, { headers: { authorization: `Bearer ${tokenA}` } });
    const res = await handleRunTrajectoriesJsonl(req, runId, { db: db() });
    expect(res.status).toBe(200);
    type Seq = { tokens: number[]; mask: number[]; logprobs: number[] };
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { id: string; split: string; error: unknown; tokens: { prompt: number; completion: number; sequences: Seq[] | null } });
    expect(lines.length).toBe(await db().trajectory.count({ where: { runId } }));
    const trained = lines.filter((l) => l.split === "train" && !l.error);
    expect(trained.length).toBeGreaterThan(0);
    for (const l of trained) {
      const seqs = l.tokens.sequences!;
      expect(seqs.length).toBeGreaterThan(0);
      for (const s of seqs) expect(s.mask.length === s.tokens.length && s.logprobs.length === s.tokens.length).toBe(true);
      // The sampled tokens are exactly the completion the runner counted, each with a real logprob.
      const sampled = seqs.flatMap((s) => s.mask.map((m, i) => ({ m, lp: s.logprobs[i]! }))).filter((x) => x.m === 1);
      expect(sampled.length).toBe(l.tokens.completion);
      expect(sampled.every((x) => x.lp <= 0 && Number.isFinite(x.lp))).toBe(true);
    }
    // Without tokens=1 the file carries counts only.
    const plain = await handleRunTrajectoriesJsonl(new Request(`http://127.0.0.1/api/export/runs/${runId}/trajectories`, { headers: { authorization: `Bearer ${tokenA}` } }), runId, { db: db() });
    expect(JSON.parse((await plain.text()).split("\n")[0]!).tokens).toEqual({ prompt: expect.any(Number), completion: expect.any(Number) });
  });

  it("downloads a PEFT folder (adapter files only) that PeftModel.from_pretrained loads, tensor for tensor", async () => {
    const res = await fetch(`${webUrl}/api/checkpoints/${runId}/1/download`, { headers: { authorization: `Bearer ${tokenA}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    expect(res.headers.get("content-disposition")).toContain(`run-${runNumber}-step-1-adapter.tar.gz`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-peft-"));
    try {
      const archive = path.join(dir, "adapter.tar.gz");
      fs.writeFileSync(archive, Buffer.from(await res.arrayBuffer()));
      const entries: string[] = [];
      await tar.t({ file: archive, onReadEntry: (e) => void entries.push(e.path) });
      const folder = `${runId}-step1`;
      expect(entries.sort()).toEqual([`${folder}/adapter_config.json`, `${folder}/adapter_model.safetensors`]);
      await tar.x({ file: archive, cwd: dir });
      const { stdout } = await promisify(execFile)(ENGINE_PYTHON, ["tests/load_peft_folder.py", MODEL, path.join(dir, folder)], {
        cwd: path.join(REPO_ROOT, "gpu-runner/engine"),
        env: { ...process.env, HF_HUB_OFFLINE: "1", TRANSFORMERS_OFFLINE: "1" },
        timeout: 300_000,
      });
      const loaded = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
      expect(loaded).toMatchObject({ same_keys: true, equal: true, peft_type: "LORA" });
      expect(loaded.tensors as number).toBeGreaterThan(0);
      // One GRPO step moved the adapter off LoRA's zero init, so the loaded model differs from the base.
      expect(loaded.max_abs_lora_b as number).toBeGreaterThan(0);
      expect(loaded.logits_max_abs_diff as number).toBeGreaterThan(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it("refuses downloads outside the caller's workspace, unknown steps, no credential, and path tricks at the runner", async () => {
    const get = (p: string, token?: string) => fetch(`${webUrl}${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect((await get(`/api/checkpoints/${runId}/1/download`, tokenB)).status).toBe(404);
    expect((await get(`/api/checkpoints/${runId}/2/download`, tokenA)).status).toBe(404);
    expect((await get(`/api/checkpoints/${runId}/x/download`, tokenA)).status).toBe(400);
    expect((await get(`/api/checkpoints/${runId}/1/download`)).status).toBe(401);
    // The runner: its own token required; run ids and steps are names, never paths.
    const atRunner = (p: string, token: string | null = TOKEN) => fetch(`${runner.url}${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect((await atRunner(`/checkpoints/${runId}/1/adapter.tar.gz`, null)).status).toBe(401);
    expect((await atRunner(`/checkpoints/${runId}/1/adapter.tar.gz`, tokenA)).status).toBe(401);
    expect((await atRunner(`/checkpoints/${runId}/1/adapter.tar.gz`)).status).toBe(200);
    for (const p of [`/checkpoints/..%2F..%2F${runId}/1/adapter.tar.gz`, `/checkpoints/${runId}/..%2F0001/adapter.tar.gz`, `/checkpoints/${runId}/-1/adapter.tar.gz`, `/checkpoints/.../1/adapter.tar.gz`]) {
      expect((await atRunner(p)).status, p).toBe(404);
    }
  });

  it("the official openai client chats with the checkpoint through /api/v1 with an API token (plain and streamed)", async () => {
    const client = new OpenAI({ baseURL: `${webUrl}/api/v1`, apiKey: tokenA, maxRetries: 0, timeout: 240_000 });
    const models = (await client.models.list()).data.map((m) => m.id);
    expect(models).toEqual(expect.arrayContaining([MODEL, `${runNumber}@1`]));

    const messages = [{ role: "user" as const, content: "Say the word apple." }];
    const r = await client.chat.completions.create({ model: `${runNumber}@1`, messages, max_tokens: 8, temperature: 0 });
    expect(r.object).toBe("chat.completion");
    expect(r.model).toBe(`${runNumber}@1`); // the caller's name, not the runner's
    expect(typeof r.choices[0]!.message.content).toBe("string");
    expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    // By run id too (what the run page shows in its address).
    expect((await client.chat.completions.create({ model: `${runId}@1`, messages, max_tokens: 4 })).model).toBe(`${runId}@1`);

    const stream = await client.chat.completions.create({ model: `${runNumber}@1`, messages, max_tokens: 8, temperature: 0, stream: true });
    let text = "";
    let chunks = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      ChatCompletionChunk.parse(chunk);
      expect(chunk.model).toBe(`${runNumber}@1`);
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(1);
    expect(finish).not.toBeNull();
    expect(text).toBe(r.choices[0]!.message.content); // greedy: the stream says what the plain answer said

    // The base model, beside it.
    expect((await client.chat.completions.create({ model: MODEL, messages, max_tokens: 4 })).model).toBe(MODEL);
  }, 300_000);

  it("a wrong or revoked token is 401; another workspace's token gets 404 for the model; bad fields are named", async () => {
    const messages = [{ role: "user" as const, content: "hi" }];
    const as = (apiKey: string) => new OpenAI({ baseURL: `${webUrl}/api/v1`, apiKey, maxRetries: 0 });
    await expect(as("rbk_not-a-token").chat.completions.create({ model: `${runNumber}@1`, messages })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(as("sk-openai-key").models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const owner = await userWithRole(db(), ws, "owner");
    const revoked = await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "revoked" });
    expect((await as(revoked.token).models.list()).data.length).toBeGreaterThan(0);
    await revokeApiToken(db(), owner.id, ws, revoked.id);
    await expect(as(revoked.token).chat.completions.create({ model: `${runNumber}@1`, messages })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const b = as(tokenB);
    for (const model of [`${runNumber}@1`, `${runId}@1`]) {
      const err = await b.chat.completions.create({ model, messages, max_tokens: 2 }).catch((e: unknown) => e);
      expect(err, model).toBeInstanceOf(OpenAI.NotFoundError);
      // The same answer as for a model that does not exist anywhere: nothing says the run is real.
      expect((err as InstanceType<typeof OpenAI.NotFoundError>).message).toContain("not found in this workspace");
    }
    expect((await b.models.list()).data.map((m) => m.id)).not.toContain(`${runNumber}@1`);

    const a = as(tokenA);
    const noStep = await a.chat.completions.create({ model: `${runNumber}@7`, messages }).catch((e: unknown) => e);
    expect(noStep).toBeInstanceOf(OpenAI.NotFoundError);
    const bad = await a.chat.completions.create({ model: `${runNumber}@1`, messages, temperature: 5 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("temperature");
  }, 120_000);

  it("checkpoints.chat answers from the checkpoint and from the base model, for this workspace's run only", async () => {
    const viewer = await callerAs(db(), ws, { role: "viewer", runnerName });
    const messages = [{ role: "user" as const, content: "Say the word river." }];
    const ckpt = await viewer.checkpoints.chat({ runId, step: 1, messages, maxTokens: 6 });
    expect(ckpt).toMatchObject({ model: `${runNumber}@1`, content: expect.any(String) });
    expect(ckpt.usage.completion_tokens).toBeGreaterThan(0);
    const base = await viewer.checkpoints.chat({ runId, step: null, messages, maxTokens: 6 });
    expect(base.model).toBe(MODEL);
    await expect(viewer.checkpoints.chat({ runId, step: 5, messages })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(callerFor(db(), other).checkpoints.chat({ runId, step: 1, messages })).rejects.toMatchObject({ code: "NOT_FOUND" });
  }, 120_000);
});
