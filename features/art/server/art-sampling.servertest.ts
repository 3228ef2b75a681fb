/**
 * Sampling through ART's base_url on real parts: the REAL runner (in this process) with its REAL engine
 * (SmolLM2-135M on CPU), a fresh Postgres, and /api/art/v1 served by the route's handler on a node HTTP
 * server. An ART model is created through slice 1's API (a log-only run: no checkpoints), then the official
 * `openai` npm client samples it at base_url as ART's `model.openai_client()` does, by its
 * `wandb-artifact:///<entity>/<project>/<name>` name:
 *   - with logprobs, every token is `token_id:<id>` and the ids decode (the engine's /detokenize) to the reply
 *   - streamed too, with the caller's model name in every chunk
 *   - `…:step7` of a run without that checkpoint is a 404 naming it; another workspace's token gets 404
 *   - the real openpipe-art (its venv: scripts/art-venv.sh) registers, samples as model.openai_client() does
 *     and logs the Choice (examples/art/sample_and_log.py); ART's reading of the tokens gives the sampled ids
 *   - a checkpointed ART run's name resolves to its newest checkpoint, `:step<N>` to that one
 *   npx vitest run --project server features/art/server/art-sampling.servertest.ts
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";
import OpenAI from "openai";
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatCompletionChunk } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner } from "@/server/runner-client";
import { env } from "@/server/env";
import { createTestDb, newWorkspace, userWithRole, type TestDb } from "@/server/test/harness";
import { createApiToken } from "@/features/workspace/server";
import { handleArtRequest } from "./art-api";
import { resolveArtModel } from "./art-sampling";
import { serveFetch } from "@/server/test/serve-fetch";

const TOKEN = "art-sampling-servertest-token-0123456789";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`art-sampling.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);
const MODEL = "SmolLM2-135M-Instruct";
const TOKEN_ID = /^token_id:(\d+)$/;
const ROOT = path.resolve(import.meta.dirname, "../../..");
const exec = promisify(execFile);

let tdb: TestDb;
let testRunner: TestRunner | undefined;
let web: http.Server;
let webUrl: string;
const db = () => tdb.handle.prisma;

/** The catch-all route's handler on a plain node server (Next is not needed to test it), streaming its answer. */
function serveWeb(): Promise<http.Server> {
  return serveFetch(async (request, url) => {
    const segments = url.pathname.replace(/^\/api\/art\/v1\/?/, "").split("/").filter(Boolean);
    return url.pathname.startsWith("/api/art/v1/") ? handleArtRequest(request, segments, { db: db() }) : new Response("no route", { status: 404 });
  });
}

describe.skipIf(!engineAvailable)("sampling through /api/art/v1 (real runner, real engine)", () => {
  let ws: string;
  let slug: string;
  let tokenA: string;
  let tokenB: string;
  let modelId: string;
  let artName: string;
  const messages = [{ role: "user" as const, content: "Count from one to twenty, in words." }];

  /** Slice 1's API: POST /preview/models, as ART's ServerlessBackend.register does. */
  async function createModel(name: string): Promise<{ id: string; entity: string }> {
    const res = await fetch(`${webUrl}/api/art/v1/preview/models`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokenA}`, "content-type": "application/json" },
      body: JSON.stringify({ project: "art-sampling", name, base_model: MODEL, return_existing: true }),
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; entity: string };
  }

  const client = (apiKey = tokenA) => new OpenAI({ baseURL: `${webUrl}/api/art/v1`, apiKey, maxRetries: 0, timeout: 240_000 });

  /** The sampled ids of a choice's logprobs, each token checked to be `token_id:<id>`. */
  function idsOf(tokens: readonly { token: string }[]): number[] {
    for (const t of tokens) expect(t.token).toMatch(TOKEN_ID);
    return tokens.map((t) => Number(TOKEN_ID.exec(t.token)![1]));
  }

  /** The ids as text, by the engine's own tokenizer; a stop's end-of-turn token is not part of the content. */
  async function decoded(ids: number[], finish: string | null): Promise<string> {
    const pieces = await testRunner!.server.supervisor.client.detokenize(ids);
    if (finish === "stop" && pieces.length > 0 && /^<\|.*\|>$/.test(pieces.at(-1)!)) pieces.pop();
    return pieces.join("");
  }

  beforeAll(async () => {
    tdb = await createTestDb();
    testRunner = await startTestRunner({ name: "art-sampling-servertest", token: TOKEN, engine: "shared" });
    // An ART run has no runner: its base model is served by the configured one (RUNNER_NAME).
    await registerRunner(db(), { name: env().RUNNER_NAME, url: testRunner.server.url, token: TOKEN });
    ws = await newWorkspace(db());
    slug = (await db().workspace.findUniqueOrThrow({ where: { id: ws }, select: { slug: true } })).slug;
    const other = await newWorkspace(db());
    tokenA = (await createApiToken(db(), { userId: (await userWithRole(db(), ws, "owner")).id, workspaceId: ws, name: "art" })).token;
    tokenB = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "other" })).token;
    web = await serveWeb();
    webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
    const model = await createModel("agent-001");
    expect(model.entity).toBe(slug);
    modelId = model.id;
    artName = `wandb-artifact:///${model.entity}/art-sampling/agent-001`;
  }, 600_000);

  afterAll(async () => {
    await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("the wandb-artifact name samples a log-only model's base model; logprobs tokens are token_id:<id> and decode to the reply", async () => {
    // return_token_ids (vLLM's extension) passes through too: the same ids, from the engine's other field.
    const body = { model: artName, messages, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 2, return_token_ids: true };
    const r = (await client().chat.completions.create(body as ChatCompletionCreateParamsNonStreaming)) as ChatCompletion & { choices: { token_ids?: number[] }[] };
    expect(r.object).toBe("chat.completion");
    expect(r.model).toBe(artName); // the caller's name, not the runner's
    const choice = r.choices[0]!;
    expect(choice.message.content).toEqual(expect.any(String));
    expect(choice.message.content!.length).toBeGreaterThan(0);
    const tokens = choice.logprobs!.content!;
    const ids = idsOf(tokens);
    expect(ids.length).toBe(r.usage!.completion_tokens);
    for (const t of tokens) for (const top of t.top_logprobs) expect(top.token).toMatch(TOKEN_ID);
    expect(choice.token_ids).toEqual(ids);
    expect(await decoded(ids, choice.finish_reason)).toBe(choice.message.content);

    // Sampling is the client at work: the run's sign of life moved.
    const run = await db().run.findUniqueOrThrow({ where: { id: modelId }, select: { status: true, lastHeartbeatAt: true } });
    expect(run.status).toBe("running");
    expect(run.lastHeartbeatAt).not.toBeNull();

    // The caller's own choice stays: return_tokens_as_token_ids false gives the tokens as text.
    const plain = await client().chat.completions.create({ ...body, return_tokens_as_token_ids: false } as ChatCompletionCreateParamsNonStreaming);
    const asText = plain.choices[0]!.logprobs!.content!;
    expect(asText.length).toBeGreaterThan(0);
    for (const t of asText) expect(t.token).not.toMatch(TOKEN_ID);
  }, 300_000);

  it("streams, with the caller's model name in every chunk and token_id:<id> tokens", async () => {
    const greedy = await client().chat.completions.create({ model: artName, messages, max_tokens: 12, temperature: 0 });
    const stream = await client().chat.completions.create({ model: artName, messages, max_tokens: 12, temperature: 0, logprobs: true, stream: true });
    let text = "";
    let chunks = 0;
    let finish: string | null = null;
    const tokens: { token: string }[] = [];
    for await (const chunk of stream) {
      ChatCompletionChunk.parse(chunk);
      expect(chunk.model).toBe(artName);
      chunks++;
      text += chunk.choices[0]?.delta.content ?? "";
      tokens.push(...(chunk.choices[0]?.logprobs?.content ?? []));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(1);
    expect(finish).not.toBeNull();
    expect(text).toBe(greedy.choices[0]!.message.content); // greedy: the stream says what the plain answer said
    expect(await decoded(idsOf(tokens), finish)).toBe(text);
  }, 300_000);

  it("plain model names are /api/v1's: the base model by its name", async () => {
    const r = await client().chat.completions.create({ model: MODEL, messages, max_tokens: 4, logprobs: true });
    expect(r.model).toBe(MODEL);
    idsOf(r.choices[0]!.logprobs!.content!);
    const missing = await client().chat.completions.create({ model: "7@1", messages, max_tokens: 2 }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
  }, 120_000);

  it(":step7 of a run without that checkpoint is a 404 naming it; another workspace's token gets 404; unknown names 404", async () => {
    const noStep = await client().chat.completions.create({ model: `${artName}:step7`, messages, max_tokens: 2 }).catch((e: unknown) => e);
    expect(noStep).toBeInstanceOf(OpenAI.NotFoundError);
    const err = noStep as InstanceType<typeof OpenAI.NotFoundError>;
    expect(err.message).toContain(`'${artName}:step7'`);
    expect(err.message).toContain("no checkpoint for step 7");
    expect(err.param).toBe("model");

    for (const model of [artName, `${artName}:step0`]) {
      const other = await client(tokenB).chat.completions.create({ model, messages, max_tokens: 2 }).catch((e: unknown) => e);
      expect(other, model).toBeInstanceOf(OpenAI.NotFoundError);
    }
    for (const model of [`wandb-artifact:///${slug}/art-sampling/agent-002`, `wandb-artifact:///${slug}/elsewhere/agent-001`]) {
      const unknown = await client().chat.completions.create({ model, messages, max_tokens: 2 }).catch((e: unknown) => e);
      expect(unknown, model).toBeInstanceOf(OpenAI.NotFoundError);
      expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).message, model).toContain("no live ART model");
    }
    const noToken = await client("rbk_not-a-token").chat.completions.create({ model: artName, messages }).catch((e: unknown) => e);
    expect(noToken).toBeInstanceOf(OpenAI.AuthenticationError);
    const get = await fetch(`${webUrl}/api/art/v1/chat/completions`, { headers: { authorization: `Bearer ${tokenA}` } });
    expect(get.status).toBe(405);
  }, 120_000);

  it("ART's own client: register, AsyncOpenAI at its inference base_url with get_inference_name(), the Choice logged (examples/art/sample_and_log.py)", async () => {
    // The real openpipe-art in its venv (scripts/art-venv.sh: built once in the user cache, as for art-client.servertest.ts).
    const venv = await exec("bash", [path.join(ROOT, "scripts/art-venv.sh")], { timeout: 20 * 60_000, maxBuffer: 10 * 1024 * 1024 });
    const python = venv.stdout.trim().split("\n").at(-1)!;
    const { stdout } = await exec(python, [path.join(ROOT, "examples/art/sample_and_log.py")], {
      timeout: 240_000,
      env: { ...process.env, ROLLBOOK_URL: webUrl, ROLLBOOK_API_KEY: tokenA, ART_BASE_MODEL: MODEL, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" },
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as { model_id: string; inference_name: string; answer_model: string; content: string; finish_reason: string; token_ids: number[]; missing_step: string };
    expect(out.inference_name).toBe(`wandb-artifact:///${slug}/art-sampling-example/sampler-001`);
    expect(out.answer_model).toBe(out.inference_name);
    expect(out.token_ids.length).toBeGreaterThan(0);
    // ART's reading of the tokens gives the ids the engine sampled: they decode to the reply.
    expect(await decoded(out.token_ids, out.finish_reason)).toBe(out.content);
    expect(out.missing_step).toBe("NotFoundError 404");

    // The sampled Choice, logged through slice 1: one train step whose rollout is that reply, its tokens counted.
    const rollouts = await db().trajectory.findMany({ where: { runId: out.model_id }, select: { step: true, messages: true, tokens: true } });
    expect(rollouts).toHaveLength(1);
    expect(rollouts[0]!.step).toBe(1);
    expect((rollouts[0]!.messages as { role: string; content: string | null }[]).at(-1)).toMatchObject({ role: "assistant", content: out.content });
    expect(rollouts[0]!.tokens).toMatchObject({ completion: out.token_ids.length });
  }, 25 * 60_000);

  it("a checkpointed ART run: the name is its newest checkpoint <run>@<step>, :step<N> that one; a deleted model is not found", async () => {
    const { id } = await createModel("agent-trained");
    await db().checkpoint.createMany({ data: [1, 3].map((step) => ({ runId: id, step, path: `/nowhere/${step}`, sizeBytes: 1n })) });
    const name = `wandb-artifact:///${slug}/art-sampling/agent-trained`;
    expect(await resolveArtModel(db(), ws, name)).toMatchObject({ kind: "checkpoint", runId: id, step: 3, runnerModel: `${id}@3` });
    expect(await resolveArtModel(db(), ws, `${name}:step1`)).toMatchObject({ kind: "checkpoint", runId: id, step: 1, runnerModel: `${id}@1` });
    expect(await resolveArtModel(db(), ws, `wandb-artifact:///${ws}/art-sampling/agent-trained`)).toMatchObject({ step: 3 }); // the workspace id as entity
    await expect(resolveArtModel(db(), ws, `${name}:step2`)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(resolveArtModel(db(), ws, `${name}:step99999999999`)).rejects.toMatchObject({ code: "NOT_FOUND" });

    const deleted = await fetch(`${webUrl}/api/art/v1/preview/models/${id}`, { method: "DELETE", headers: { authorization: `Bearer ${tokenA}` } });
    expect(deleted.status).toBe(200);
    await expect(resolveArtModel(db(), ws, name)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});
