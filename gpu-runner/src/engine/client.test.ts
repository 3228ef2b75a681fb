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
