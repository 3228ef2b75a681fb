/**
 * Only the runner can call the engine it spawns: the supervisor gives each engine an ENGINE_TOKEN (a random
 * one unless configured) and its client sends it. The stand-in engine here refuses, like the real one, every
 * request without `Authorization: Bearer $ENGINE_TOKEN` (the real one's check: engine/tests/test_engine_token.py).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../test-support/net";
import { EngineSupervisor } from "./supervisor";

const GUARDED_FAKE = `
import fs from "node:fs";
import http from "node:http";
const [port, seen] = [Number(process.argv[2]), process.argv[3]];
const token = process.env.ENGINE_TOKEN;
fs.writeFileSync(seen, token ?? "");
http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  if (!token || req.headers.authorization !== "Bearer " + token) {
    res.statusCode = 401;
    return res.end(JSON.stringify({ error: { message: "missing or wrong engine token" } }));
  }
  res.end(JSON.stringify({ status: "ok", backend: "fake", device: "cpu", model: "m", max_context_tokens: 512,
    memory: { rss_bytes: 1, gpu_allocated_bytes: null } }));
}).listen(port, "127.0.0.1", () => console.log("ENGINE READY " + port));
`;

const sups: EngineSupervisor[] = [];
afterEach(async () => {
  await Promise.all(sups.splice(0).map((s) => s.stop(2_000)));
});

async function spawnGuarded(token?: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-token-"));
  const script = path.join(dir, "guarded-engine.mjs");
  const seen = path.join(dir, "token-seen");
  fs.writeFileSync(script, GUARDED_FAKE);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const sup = new EngineSupervisor({
    url,
    token,
    spawn: { python: process.execPath, args: [script, String(port), seen], cwd: dir },
    healthIntervalMs: 200,
    onLog: () => {},
  });
  sups.push(sup);
  sup.start();
  // Ready means the engine accepted the client's health check, which it does only with its token.
  await sup.waitReady(15_000);
  return { url, sup, seen: fs.readFileSync(seen, "utf8") };
}

describe("engine token", () => {
  it("each spawned engine gets a random token that only its supervisor's client holds", async () => {
    const a = await spawnGuarded();
    const b = await spawnGuarded();
    expect(a.seen).toMatch(/^[0-9a-f]{64}$/);
    expect(b.seen).toMatch(/^[0-9a-f]{64}$/);
    expect(a.seen).not.toBe(b.seen);
    expect((await a.sup.client.health()).status).toBe("ok");
    expect((await a.sup.client.fetchRaw("/health")).status).toBe(200); // the pass-through path sends it too
    // Anyone else on the machine (no token, or another engine's) is refused.
    expect((await fetch(`${a.url}/health`)).status).toBe(401);
    expect((await fetch(`${a.url}/health`, { headers: { authorization: `Bearer ${b.seen}` } })).status).toBe(401);
  });

  it("a configured token is the one the engine gets and the client sends", async () => {
    const token = "configured-engine-token-0123456789abcdef";
    const { seen, sup } = await spawnGuarded(token);
    expect(seen).toBe(token);
    expect((await sup.client.health()).backend).toBe("fake");
  });
});
