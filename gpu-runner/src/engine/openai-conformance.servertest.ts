/**
 * The official `openai` npm client against the real engine (spawned by the supervisor exactly as the runner
 * does: `python -m rollbook_engine --host 127.0.0.1 --port <free> --model SmolLM2-135M-Instruct`, CPU):
 * what an OpenAI user writes must work as it does against OpenAI, and every response and chunk on the wire
 * must also satisfy the shared zod contract. The Python client runs the same checks in
 * gpu-runner/engine/tests/test_openai_conformance.py.
 *   npx vitest run --project server gpu-runner/src/engine/openai-conformance.servertest.ts
 * Set ENGINE_URL (and its ENGINE_TOKEN) to use an engine that is already running; in the server project it
 * uses the tests' shared engine (test-support/shared-engine.ts). The engine's token is the client's API key,
 * as it would be for any OpenAI user.
 */
import fs from "node:fs";
import { freePort } from "../test-support/net";
import { sharedEngine } from "../test-support/shared-engine";
import path from "node:path";
import OpenAI from "openai";
import type { ChatCompletionChunk as OpenAIChunk } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChatCompletionChunk, ChatCompletionResponse, DEFAULT_MODEL } from "../../../contracts";
import { loadEnv, REPO_ROOT } from "../env";
import { randomToken } from "../tokens";
import { EngineSupervisor } from "./supervisor";

// Only ENGINE_* matter here; the runner's own token is not used.
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: "conformance-unused-runner-token" });
const engineAvailable = Boolean(env0.ENGINE_URL) || fs.existsSync(env0.ENGINE_PYTHON);
if (!engineAvailable) console.warn(`openai-conformance: skipped, no engine python at ${env0.ENGINE_PYTHON} (npm run setup)`);

const MODEL = DEFAULT_MODEL;
const MSGS = [{ role: "user" as const, content: "Write one sentence about the sea." }];
const ADD = {
  type: "function" as const,
  function: {
    name: "add",
    description: "Add two numbers a and b",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  },
};
/** An agent conversation with an earlier call and its result: zero-shot, a 135M model writes malformed calls. */
const TOOL_CHAT: OpenAI.ChatCompletionMessageParam[] = [
  { role: "user", content: "What is 1 plus 2?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "call_0", type: "function", function: { name: "add", arguments: '{"a": 1, "b": 2}' } }],
  },
  { role: "tool", tool_call_id: "call_0", content: "3" },
  { role: "assistant", content: "1 plus 2 is 3." },
  { role: "user", content: "What is 4 plus 5?" },
];


interface Assembled {
  role: string | undefined;
  content: string;
  toolCalls: OpenAIChunk.Choice.Delta.ToolCall[];
  logprobs: { token: string; logprob: number }[];
  finish: string | null;
}

/** Read a stream, check every chunk against the zod contract, and assemble each choice by index. */
async function assemble(stream: AsyncIterable<OpenAIChunk>): Promise<{ choices: Map<number, Assembled>; chunks: OpenAIChunk[] }> {
  const choices = new Map<number, Assembled>();
  const chunks: OpenAIChunk[] = [];
  for await (const chunk of stream) {
    ChatCompletionChunk.parse(chunk);
    chunks.push(chunk);
    for (const c of chunk.choices) {
      const got = choices.get(c.index) ?? { role: undefined, content: "", toolCalls: [], logprobs: [], finish: null };
      choices.set(c.index, got);
      got.role ??= c.delta.role;
      got.content += c.delta.content ?? "";
      got.toolCalls.push(...(c.delta.tool_calls ?? []));
      got.logprobs.push(...(c.logprobs?.content ?? []).map((e) => ({ token: e.token, logprob: e.logprob })));
      if (c.finish_reason) {
        expect(got.finish).toBeNull(); // finish_reason once per choice, on its last chunk
        got.finish = c.finish_reason;
      }
    }
  }
  return { choices, chunks };
}

describe.skipIf(!engineAvailable)("OpenAI conformance of the engine (npm openai client, real model)", () => {
  let supervisor: EngineSupervisor | null = null;
  let client: OpenAI;

  beforeAll(async () => {
    let url = env0.ENGINE_URL;
    let token = env0.ENGINE_TOKEN as string; // loadEnv demands one with ENGINE_URL
    // Else the server tests' shared engine where it runs (it answers as any engine does), else one of its own.
    const shared = url ? null : await sharedEngine();
    if (shared) ({ url, token } = shared);
    if (!url) {
      token = randomToken();
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      supervisor = new EngineSupervisor({
        url,
        token,
        spawn: {
          python: env0.ENGINE_PYTHON,
          args: ["-m", "rollbook_engine", "--host", "127.0.0.1", "--port", String(port), "--model", MODEL],
          cwd: path.join(REPO_ROOT, "gpu-runner/engine"),
        },
        healthIntervalMs: 500,
        onLog: () => {},
      });
      supervisor.start();
      await supervisor.waitReady(170_000);
    }
    client = new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0, timeout: 110_000 });
  });

  afterAll(async () => {
    await supervisor?.stop();
  });

  it("answers a plain completion in OpenAI's shape (and the zod contract's)", async () => {
    const r = await client.chat.completions.create({ model: MODEL, messages: MSGS, max_tokens: 8, seed: 1 });
    ChatCompletionResponse.parse(r);
    expect(r.object).toBe("chat.completion");
    expect(r.id).toMatch(/^chatcmpl-/);
    const c = r.choices[0]!;
    expect(c.message.role).toBe("assistant");
    expect(typeof c.message.content).toBe("string");
    expect(["stop", "length"]).toContain(c.finish_reason);
    expect(r.usage!.total_tokens).toBe(r.usage!.prompt_tokens + r.usage!.completion_tokens);
  });

  it("streams token by token what the plain response says, usage in the last chunk", async () => {
    const body = { model: MODEL, messages: MSGS, max_tokens: 12, seed: 7, logprobs: true, top_logprobs: 2 };
    const plain = await client.chat.completions.create(body);
    const { choices, chunks } = await assemble(
      await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }),
    );
    const got = choices.get(0)!;
    expect(got.role).toBe("assistant");
    expect(got.content).toBe(plain.choices[0]!.message.content);
    expect(got.finish).toBe(plain.choices[0]!.finish_reason);
    expect(got.logprobs).toEqual(plain.choices[0]!.logprobs!.content!.map((e) => ({ token: e.token, logprob: e.logprob })));
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage).toEqual(plain.usage);
  });

  it("the client's stream helper accumulates the chunks into the same completion", async () => {
    const body = { model: MODEL, messages: MSGS, max_tokens: 10, seed: 11 };
    const plain = await client.chat.completions.create(body);
    const final = await client.chat.completions.stream(body).finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
  });

  it("returns logprobs with sorted top_logprobs and bytes", async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: MSGS,
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 4,
    });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content).toHaveLength(r.usage!.completion_tokens);
    for (const e of content) {
      expect(e.top_logprobs).toHaveLength(4);
      const tops = e.top_logprobs.map((t) => t.logprob);
      expect(tops).toEqual([...tops].sort((a, b) => b - a));
      expect(tops[0]).toBeGreaterThanOrEqual(e.logprob);
      expect(e.top_logprobs[0]!.token).toBe(e.token); // greedy
      expect(e.bytes!.every((b) => Number.isInteger(b) && b >= 0 && b < 256)).toBe(true);
    }
  });

  it("parses a forced tool call into tool_calls, streamed or not", async () => {
    const body = {
      model: MODEL,
      messages: TOOL_CHAT,
      tools: [ADD],
      tool_choice: { type: "function" as const, function: { name: "add" } },
      max_tokens: 24,
      temperature: 0,
    };
    const r = await client.chat.completions.create(body);
    const c = r.choices[0]!;
    expect(c.finish_reason).toBe("tool_calls");
    expect(c.message.content).toBeNull();
    const call = c.message.tool_calls![0]!;
    expect(call.type).toBe("function");
    expect(call.id).toMatch(/^call_/);
    if (call.type !== "function") throw new Error("not a function call");
    expect(call.function.name).toBe("add");
    expect(JSON.parse(call.function.arguments)).toEqual({ a: 4, b: 5 });

    const streamed = (await assemble(await client.chat.completions.create({ ...body, stream: true }))).choices.get(0)!;
    expect(streamed.finish).toBe("tool_calls");
    // OpenAI's incremental deltas: the first names the call, the rest add argument fragments.
    const [first, ...more] = streamed.toolCalls;
    expect([first?.index, first?.type, first?.function?.name]).toEqual([0, "function", "add"]);
    expect(first?.id).toMatch(/^call_/);
    expect(more.length).toBeGreaterThan(0);
    expect(more.every((t) => t.index === 0 && t.id === undefined && t.function?.name === undefined)).toBe(true);
    expect(streamed.toolCalls.map((t) => t.function?.arguments ?? "").join("")).toBe(call.function.arguments);
  });

  it("samples n choices, and the same seed samples the same ones", async () => {
    const body = { model: MODEL, messages: MSGS, max_tokens: 8, seed: 5, n: 2, temperature: 1 };
    const a = await client.chat.completions.create(body);
    const b = await client.chat.completions.create(body);
    expect(a.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(b.choices.map((c) => c.message.content)).toEqual(a.choices.map((c) => c.message.content));
    const { choices } = await assemble(await client.chat.completions.create({ ...body, stream: true }));
    expect([0, 1].map((i) => choices.get(i)!.content)).toEqual(a.choices.map((c) => c.message.content));
  });

  it("cuts the reply before a stop string, streamed or not", async () => {
    const full = (await client.chat.completions.create({ model: MODEL, messages: MSGS, max_tokens: 16, temperature: 0 }))
      .choices[0]!.message.content!;
    const words = full.split(/\s+/).filter(Boolean);
    expect(words.length).toBeGreaterThanOrEqual(3);
    const stop = ` ${words[2]}`;
    const body = { model: MODEL, messages: MSGS, max_tokens: 16, temperature: 0, stop: [stop] };
    const cut = (await client.chat.completions.create(body)).choices[0]!;
    expect(cut.finish_reason).toBe("stop");
    expect(cut.message.content).toBe(full.slice(0, full.indexOf(stop)));
    const streamed = (await assemble(await client.chat.completions.create({ ...body, stream: true }))).choices.get(0)!;
    expect(streamed.content).toBe(cut.message.content);
  });

  it("refuses an over-long prompt at once as a BadRequestError naming messages", async () => {
    const t0 = performance.now();
    const err = await client.chat.completions
      .create({ model: MODEL, messages: [{ role: "user", content: "word ".repeat(200_000) }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages");
    expect((err as Error).message).toMatch(/context/);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });
});
