/**
 * EngineClient's error reporting against a stand-in engine: the chat route's OpenAI-shaped errors come
 * through as the engine's own message (which names the field at fault) with the HTTP status.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineClient, EngineError } from "./client";

let server: http.Server;
let client: EngineClient;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    if (req.url === "/tokenize") {
      let raw = "";
      req.on("data", (c: Buffer) => (raw += c.toString()));
      req.on("end", () => {
        const body = JSON.parse(raw) as { messages: { role: string }[]; add_generation_prompt?: boolean };
        if (body.messages[0]!.role === "robot") {
          res.statusCode = 422;
          res.end(JSON.stringify({ detail: "invalid request: messages.0.role: Input should be 'system', 'user', 'assistant' or 'tool'", field: "messages.0.role" }));
          return;
        }
        // Echo what was asked in the ids, so the test sees the body went through as given.
        const tokens = body.add_generation_prompt === false ? [1, 2] : [1, 2, 3];
        res.end(JSON.stringify({ count: body.messages[0]!.role === "system" ? 9 : tokens.length, max_model_len: 8192, tokens }));
      });
      return;
    }
    res.statusCode = req.url === "/v1/chat/completions" ? 400 : 404;
    res.end(
      req.url === "/v1/chat/completions"
        ? JSON.stringify({
            error: {
              message: "invalid request: continue_from.message_count: must be less than the number of messages (2)",
              type: "invalid_request_error",
              param: "continue_from.message_count",
              code: 400,
            },
          })
        : JSON.stringify({ detail: "Not Found" }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  client = new EngineClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("EngineClient errors", () => {
  it("reports the engine's OpenAI-shaped error message and status", async () => {
    const err = await client
      .chat({ model: "m", messages: [{ role: "user", content: "hi" }], continue_from: { token_ids: [1], message_count: 2 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).status).toBe(400);
    expect((err as EngineError).message).toBe(
      "engine /v1/chat/completions → 400: invalid request: continue_from.message_count: must be less than the number of messages (2)",
    );
  });

  it("still reports FastAPI's plain detail", async () => {
    const err = await client.health().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect((err as EngineError).message).toBe("engine /health → 404: Not Found");
  });
});

describe("EngineClient.tokenize", () => {
  it("sends the chat body with add_generation_prompt and returns the ids", async () => {
    const messages = [{ role: "user" as const, content: "hi" }];
    expect(await client.tokenize({ model: "m", messages })).toEqual({ count: 3, max_model_len: 8192, tokens: [1, 2, 3], served: false });
    expect((await client.tokenize({ model: "m", messages, add_generation_prompt: false })).tokens).toEqual([1, 2]);
  });

  it("reports the field the engine refused, and a count that does not match the ids", async () => {
    const refused = await client
      .tokenize({ model: "m", messages: [{ role: "robot" as "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(EngineError);
    expect((refused as EngineError).status).toBe(422);
    expect((refused as EngineError).message).toMatch(/^engine \/tokenize → 422: invalid request: messages\.0\.role: /);
    const drifted = await client.tokenize({ model: "m", messages: [{ role: "system", content: "x" }] }).catch((e: unknown) => e);
    expect((drifted as EngineError).message).toBe("engine /tokenize answered count 9 for 3 ids");
  });
});

describe("EngineClient waits as long as its caller allows", () => {
  // An engine busy with a train step answers a queued chat call late. Node's global fetch gave up on headers
  // after 300 s whatever the rollout's own limit was; the client's transport now adds no limit of its own.
  let slow: http.Server;
  let url: string;
  beforeAll(async () => {
    slow = http.createServer((_req, res) => {
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ status: "ok" }));
      }, 2_500);
    });
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => slow.close(() => resolve())));

  it("a transport limit shorter than the engine's answer fails, naming the timeout", async () => {
    const err = await new EngineClient(url, undefined, { waitLimitMs: 200 }).fetchRaw("/health").catch((e: unknown) => e);
    expect(String((err as Error).cause ?? err)).toMatch(/timeout/i);
  });

  it("the default client waits for the late answer (no transport limit)", async () => {
    const res = await new EngineClient(url).fetchRaw("/health");
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("a late answer within the caller's own deadline arrives; past it the caller's abort wins", async () => {
    const client = new EngineClient(url);
    const aborted = await client.fetchRaw("/health", { signal: AbortSignal.timeout(200) }).catch((e: unknown) => e);
    expect((aborted as Error).name).toMatch(/TimeoutError|AbortError/);
    expect((await client.fetchRaw("/health", { signal: AbortSignal.timeout(5_000) })).ok).toBe(true);
  });
});
