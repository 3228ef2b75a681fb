/**
 * `/api/v1/chat/completions` as a shared door, on real parts (the web handler on a node server, the REAL runner
 * with the server tests' shared engine, SmolLM2-135M on CPU, a fresh Postgres, an API token), with the official
 * `openai` npm client where a user would use it:
 *   - a field the door does not know is a 400 naming it (OpenAI's behaviour), not dropped; neutral values of
 *     OpenAI fields the engine lacks and fields without effect are accepted;
 *   - response_format json_schema / json_object come back as JSON (the engine's constrained decoding);
 *   - no max_tokens samples API_MAX_TOKENS_DEFAULT tokens at most, more than API_MAX_TOKENS_CEILING is a 400;
 *   - a completion past API_REQUEST_DEADLINE_S is a 504 that says so, and the engine stops sampling it.
 *   npx vitest run --project server features/openai-api/server/api-v1-limits.servertest.ts
 */
import fs from "node:fs";
import type http from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { sharedEngine } from "@/gpu-runner/src/test-support/shared-engine";
import { handleChatCompletions } from "./openai-api";
import { registerRunner } from "@/server/runner-client";
import { createTestDb, newWorkspace, userWithRole, type TestDb } from "@/server/test/harness";
import { createApiToken } from "@/features/workspace/server";
import { serveFetch } from "@/server/test/serve-fetch";
import { resetEnv } from "@/server/env";

const TOKEN = "api-v1-limits-servertest-token-0123456789";
const engineAvailable = fs.existsSync(loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON);
const MODEL = "SmolLM2-135M-Instruct";
const STORY = [{ role: "user" as const, content: "Write a long story about a lighthouse keeper and the sea, with many chapters." }];

let tdb: TestDb;
let testRunner: TestRunner | undefined;
let web: http.Server;
let baseURL: string;
let apiKey: string;
const saved = { ...process.env };

function setLimits(vars: Record<string, string>) {
  for (const k of ["API_MAX_TOKENS_DEFAULT", "API_MAX_TOKENS_CEILING", "API_REQUEST_DEADLINE_S"]) delete process.env[k];
  Object.assign(process.env, vars);
  resetEnv();
}

async function post(body: Record<string, unknown>) {
  const res = await fetch(`${baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: STORY, ...body }),
  });
  return { status: res.status, json: (await res.json()) as { error?: { message: string; param: string | null; code: string | null } } & Record<string, unknown> };
}

describe.skipIf(!engineAvailable)("/api/v1 as a shared door (real runner, real engine)", () => {
  let client: OpenAI;

  beforeAll(async () => {
    tdb = await createTestDb();
    const db = tdb.handle.prisma;
    testRunner = await startTestRunner({ name: "api-v1-limits", token: TOKEN, engine: "shared" });
    const ws = await newWorkspace(db);
    await registerRunner(db, { name: `api-limits-${ws}`, url: testRunner.server.url, token: TOKEN });
    // An instance runner that says it serves the base model (/api/v1 resolves a base model through what is served).
    await db.runner.updateMany({ where: { name: `api-limits-${ws}` }, data: { models: [MODEL] } });
    const owner = await userWithRole(db, ws, "owner");
    apiKey = (await createApiToken(db, { userId: owner.id, workspaceId: ws, name: "limits" })).token;
    web = await serveFetch(async (request, url) =>
      url.pathname === "/api/v1/chat/completions" ? handleChatCompletions(request, { db }) : new Response("no route", { status: 404 }),
    );
    baseURL = `http://127.0.0.1:${(web.address() as AddressInfo).port}/api/v1`;
    client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  }, 600_000);

  afterAll(async () => {
    process.env = saved;
    resetEnv();
    await new Promise<void>((r) => (web ? web.close(() => r()) : r()));
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("refuses a field it does not know, by name; accepts OpenAI's fields without effect and neutral values", async () => {
    setLimits({});
    for (const [field, value] of [["top_k", 5], ["guided_json", { type: "object" }], ["resposne_format", { type: "json_object" }]] as const) {
      const r = await post({ max_tokens: 4, [field]: value });
      expect(r.status, field).toBe(400);
      expect(r.json.error).toMatchObject({ param: field, message: `Unrecognized request argument supplied: ${field}` });
    }
    const penalty = await post({ max_tokens: 4, frequency_penalty: 0.5 });
    expect(penalty.status).toBe(400);
    expect(penalty.json.error).toMatchObject({ param: "frequency_penalty" });
    const fine = await post({ max_tokens: 4, store: false, metadata: { team: "a" }, frequency_penalty: 0, presence_penalty: 0, logit_bias: {} });
    expect(fine.status).toBe(200);
  });

  it("answers response_format json_schema and json_object in JSON (the official client)", async () => {
    setLimits({});
    const schema = {
      type: "object",
      properties: { animal: { type: "string", maxLength: 20 }, legs: { type: "integer", minimum: 0, maximum: 100 } },
      required: ["animal", "legs"],
      additionalProperties: false,
    };
    const messages = [{ role: "user" as const, content: "Name one animal and how many legs it has." }];
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({
        model: MODEL,
        messages,
        seed,
        max_tokens: 60,
        response_format: { type: "json_schema", json_schema: { name: "animal", schema, strict: true } },
      });
      const value = JSON.parse(r.choices[0]!.message.content!) as { animal: unknown; legs: unknown };
      expect(Object.keys(value).sort()).toEqual(["animal", "legs"]);
      expect(Number.isInteger(value.legs)).toBe(true);
    }
    const obj = await client.chat.completions.create({ model: MODEL, messages, seed: 4, max_tokens: 80, response_format: { type: "json_object" } });
    expect(obj.choices[0]!.message.content!.startsWith("{")).toBe(true);
    const bad = await post({ max_tokens: 4, response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "string", pattern: "(unclosed" } } } });
    expect(bad.status).toBe(400);
    expect(bad.json.error?.param).toMatch(/^response_format/);
  });

  it("samples API_MAX_TOKENS_DEFAULT tokens when max_tokens is unset, and refuses more than the ceiling", async () => {
    setLimits({ API_MAX_TOKENS_DEFAULT: "16", API_MAX_TOKENS_CEILING: "64" });
    const r = await client.chat.completions.create({ model: MODEL, messages: STORY, seed: 1 });
    expect(r.choices[0]!.finish_reason).toBe("length");
    expect(r.usage?.completion_tokens).toBe(16);
    const over = await post({ max_tokens: 65 });
    expect(over.status).toBe(400);
    expect(over.json.error).toMatchObject({ param: "max_tokens" });
    expect(over.json.error!.message).toContain("API_MAX_TOKENS_CEILING");
    const overNew = await post({ max_completion_tokens: 1000 });
    expect(overNew.json.error).toMatchObject({ param: "max_completion_tokens" });
  });

  it("answers a completion past API_REQUEST_DEADLINE_S with a 504 that says so, and the engine stops it", async () => {
    setLimits({ API_REQUEST_DEADLINE_S: "2", API_MAX_TOKENS_CEILING: "4096" });
    const engine = (await sharedEngine())!; // the server project always runs a broker
    const cancelled = async () => {
      const res = await fetch(`${engine.url}/health`, { headers: { authorization: `Bearer ${engine.token}` } });
      const health = (await res.json()) as { stats?: { cancelled_rows?: number } };
      return health.stats?.cancelled_rows ?? 0;
    };
    const before = await cancelled();
    const t0 = Date.now();
    // 4,000 tokens on a CPU engine is minutes: well past a 2 s deadline.
    const r = await post({ max_tokens: 4000, temperature: 1, seed: 5 });
    expect(r.status).toBe(504);
    expect(r.json.error).toMatchObject({ code: "generation_deadline_exceeded" });
    expect(r.json.error!.message).toMatch(/generation exceeded .*2 s deadline .*API_REQUEST_DEADLINE_S.*max_tokens 4000/);
    expect(Date.now() - t0).toBeLessThan(60_000);
    await expect.poll(cancelled, { timeout: 60_000, interval: 500 }).toBeGreaterThan(before);
  });
});
