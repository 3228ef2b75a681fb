/**
 * Issue 16, finding 6 ("limits at every door"), tried as an attacker would, through the real HTTP handlers
 * (tRPC, Better Auth, exports and downloads, /api/v1) and the real runner server on a port:
 *
 * - a body past the door's cap is 413 before more than the cap is read (counted while it streams; a declared
 *   content-length over the cap is refused at once), on the web tRPC route, the auth route, the GET doors
 *   (which take no body at all), /api/v1 and the runner's tRPC and plain HTTP routes;
 * - NUL anywhere and control characters in one-line fields are 400 naming the field, never a 500;
 * - JSON nested deeper than MAX_JSON_DEPTH is refused at parse time naming the file and line (config.json and
 *   tasks.jsonl through the real runs.start → runner Check path), and a deep tRPC body is a 400, not a 500;
 * - every refusal leaves the rows (users, tokens, experiments, versions, runs, names) as they were.
 *
 *   npx vitest run --project server server/security/limits.servertest.ts
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import superjson from "superjson";
import { resetEnv } from "../env";
import { handleAuthRequest } from "../http/auth-handler";
import { handleTrpcRequest } from "../http/trpc-handler";
import { handleChatCompletions, handleModels } from "../http/openai-api";
import { handleRunMetricsCsv, handleRunsTableCsv, handleRunTrajectoriesJsonl } from "../http/export";
import { handleCheckpointDownload } from "../http/checkpoint-download";
import { handleRunEvents } from "../http/run-events";
import { registerRunner } from "../runner-client";
import { createApiToken } from "../services/api-tokens";
import { dispatcherFor } from "../services/dispatcher";
import { ensureDefaultExperiment } from "../services/workspace";
import { startEnginelessRunner, type EnginelessRunner } from "../test/engineless-runner";
import { createRunningRun, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "../test/harness";

const ORIGIN = "http://127.0.0.1:3000";
/** The runner's cap in this test (RUNNER_MAX_REQUEST_BYTES), small so the test streams little. */
const RUNNER_CAP = 1_000_000;
const MB = 1_000_000;
/** MAX_JSON_DEPTH (gpu-runner/contracts/json-depth.ts), written out so this file also runs on code without it. */
const MAX_JSON_DEPTH = 64;
/** MAX_REQUEST_BYTES's default (server/env.ts). */
const DEFAULT_MAX_REQUEST_BYTES = 20 * MB;

let tdb: TestDb;
let runner: EnginelessRunner;
let ws: string;
let token: string;
let experimentId: string;
let runId: string;
const runnerName = "limits-runner";
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  delete process.env.MAX_REQUEST_BYTES;
  resetEnv();
  tdb = await createTestDb();
  runner = await startEnginelessRunner("limits", { RUNNER_MAX_REQUEST_BYTES: String(RUNNER_CAP) });
  await registerRunner(db(), { name: runnerName, url: runner.url, token: runner.token });
  ws = await newWorkspace(db());
  const owner = await userWithRole(db(), ws, "owner");
  token = (await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "limits" })).token;
  experimentId = (await ensureDefaultExperiment(db(), ws)).id;
  runId = await createRunningRun(db(), ws);
});
afterAll(async () => {
  if (tdb) await dispatcherFor(db()).stop();
  await runner?.close();
  await tdb?.drop();
});

/** Everything a refusal must leave as it was. */
async function rows() {
  const [users, tokens, workspaces, experiments, versions, runs, run, workspace] = await Promise.all([
    db().user.count(),
    db().apiToken.count(),
    db().workspace.count(),
    db().experiment.count(),
    db().experimentVersion.count(),
    db().run.count(),
    db().run.findUniqueOrThrow({ where: { id: runId }, select: { tags: true, notes: true } }),
    db().workspace.findUniqueOrThrow({ where: { id: ws }, select: { name: true } }),
  ]);
  return { users, tokens, workspaces, experiments, versions, runs, run, workspace };
}

/** A body of `total` bytes handed out 64 KB at a time, only when read; `pulled` is what the server took. */
function countingBody(total: number, byte = 0x61) {
  const state = { pulled: 0 };
  const chunk = 64 * 1024;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(c) {
        if (state.pulled >= total) return c.close();
        const n = Math.min(chunk, total - state.pulled);
        state.pulled += n;
        c.enqueue(new Uint8Array(n).fill(byte));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, state };
}

const auth = () => ({ authorization: `Bearer ${token}` });

type TrpcBody = { error?: { json: { message: string; data: { code: string; httpStatus: number; issues: string[] | null } } }; result?: { data: unknown } };

async function trpcPost(path: string, input: unknown, headers: Record<string, string> = auth()) {
  const req = new Request(`${ORIGIN}/api/trpc/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(superjson.serialize(input)),
  });
  const res = await handleTrpcRequest(req, db(), { runnerName });
  return { status: res.status, body: (await res.json()) as TrpcBody };
}

/** The text a refusal shows: the message, or the input issues when zod refused it. */
function refusal(body: TrpcBody): string {
  const e = body.error!.json;
  return e.data.issues?.length ? e.data.issues.join("; ") : e.message;
}

/** Arrays nested n deep: [[[…]]]. */
function deep(n: number): string {
  return "[".repeat(n) + "]".repeat(n);
}

/** Objects nested n deep: {"a":{"a":…1…}}. */
function deepObject(n: number): string {
  return '{"a":'.repeat(n) + "1" + "}".repeat(n);
}

describe("request body caps", () => {
  it("tRPC: a body past MAX_REQUEST_BYTES (20 MB by default) is 413 having read at most the cap", async () => {
    const before = await rows();
    const { stream, state } = countingBody(40 * MB);
    const req = new Request(`${ORIGIN}/api/trpc/experiments.create`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth() },
      body: stream,
      duplex: "half",
    } as RequestInit);
    const res = await handleTrpcRequest(req, db(), { runnerName });
    expect(res.status).toBe(413);
    expect(state.pulled).toBeLessThanOrEqual(DEFAULT_MAX_REQUEST_BYTES + 64 * 1024);
    expect(((await res.json()) as TrpcBody).error!.json.message).toMatch(/MAX_REQUEST_BYTES/);
    expect(await rows()).toEqual(before);
  });

  it("tRPC: a declared content-length over the cap is 413 at once, nothing read", async () => {
    const { stream, state } = countingBody(40 * MB);
    const req = new Request(`${ORIGIN}/api/trpc/experiments.create`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(300 * MB), ...auth() },
      body: stream,
      duplex: "half",
    } as RequestInit);
    const res = await handleTrpcRequest(req, db(), { runnerName });
    expect(res.status).toBe(413);
    expect(state.pulled).toBeLessThanOrEqual(64 * 1024);
  });

  it("tRPC: a full 8 MB experiment whose every byte JSON escapes to two still fits the default cap", async () => {
    const files = { ...templateFiles(), "lib/slashes.ts": "\\".repeat(7_950_000) };
    const res = await trpcPost("experiments.create", { name: "eight megabytes", files });
    expect(res.status).toBe(200);
  });

  it("auth: a sign-up body over 64 KB is 413 and creates no user, streamed or declared", async () => {
    const before = await rows();
    const big = JSON.stringify({ name: "x".repeat(200_000), email: "big@example.com", password: "correct horse 1" });
    const declared = await handleAuthRequest(
      new Request(`${ORIGIN}/api/auth/sign-up/email`, { method: "POST", headers: { "content-type": "application/json", origin: ORIGIN }, body: big }),
      db(),
    );
    expect(declared.status).toBe(413);
    const { stream, state } = countingBody(10 * MB);
    const streamed = await handleAuthRequest(
      new Request(`${ORIGIN}/api/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: stream,
        duplex: "half",
      } as RequestInit),
      db(),
    );
    expect(streamed.status).toBe(413);
    expect(state.pulled).toBeLessThanOrEqual(64 * 1024 + 64 * 1024);
    expect(await rows()).toEqual(before);
  });

  it("exports, downloads, run events and /api/v1/models take no body: one is 413", async () => {
    const withBody = (path: string) =>
      new Request(`${ORIGIN}${path}`, { method: "GET", headers: { ...auth(), "content-length": "5", "transfer-encoding": "chunked" } });
    const opts = { db: db() };
    const answers = [
      await handleRunsTableCsv(withBody("/api/export/runs"), opts),
      await handleRunMetricsCsv(withBody(`/api/export/runs/${runId}/metrics`), runId, opts),
      await handleRunTrajectoriesJsonl(withBody(`/api/export/runs/${runId}/trajectories`), runId, opts),
      await handleCheckpointDownload(withBody(`/api/checkpoints/${runId}/1/download`), runId, "1", opts),
      await handleRunEvents(withBody(`/api/runs/${runId}/events`), runId, opts),
      await handleModels(withBody("/api/v1/models"), opts),
    ];
    for (const res of answers) {
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/takes no request body/);
    }
  });

  it("/api/v1/chat/completions: a streamed body past its cap is 413 having read at most the cap", async () => {
    const { stream, state } = countingBody(12 * MB);
    const res = await handleChatCompletions(
      new Request(`${ORIGIN}/api/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth() },
        body: stream,
        duplex: "half",
      } as RequestInit),
      { db: db() },
    );
    expect(res.status).toBe(413);
    expect(state.pulled).toBeLessThanOrEqual(4 * 1024 * 1024 + 64 * 1024);
  });
});

describe("the web server's front door (server/index.ts)", () => {
  it("a declared body over its route's cap is 413 before Next sees the request; the connection is closed", async () => {
    // Imported here, not at the top: this file also runs (and fails test by test) on code without the gate.
    const { refuseDeclaredOversize } = await import("../http/body-gate");
    const { loadEnv } = await import("../env");
    const e = loadEnv({ NODE_ENV: "test" });
    let reachedNext = 0;
    const server = http.createServer((req, res) => {
      if (refuseDeclaredOversize(req, res, e)) return;
      reachedNext++;
      req.resume();
      req.on("end", () => res.end("next"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const cases: [string, string, number, number][] = [
        ["POST", "/api/trpc/experiments.create", 300 * MB, 413],
        ["POST", "/api/auth/sign-up/email", 100_000, 413],
        ["POST", "/api/v1/chat/completions", 5 * MB, 413],
        ["GET", "/api/export/runs", 5, 413],
        ["POST", "/api/trpc/experiments.create", 1_000, 200],
      ];
      for (const [method, path, declared, status] of cases) {
        const res = await rawExchange({ url: `http://127.0.0.1:${port}`, method, path, headers: { "content-length": String(declared) }, send: Math.min(declared, 64 * 1024), end: declared <= 64 * 1024 });
        expect(res, `${method} ${path} ${declared}`).toMatchObject({ status });
        if (status === 413) expect(res !== "no answer" && res.headers.connection).toBe("close");
      }
      expect(reachedNext).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

/** One raw HTTP exchange: headers, then `send` bytes (the rest never comes unless `end`); the answer or a timeout. */
function rawExchange(opts: { url: string; method: string; path: string; headers?: Record<string, string>; send: number; end?: boolean; waitMs?: number }) {
  return new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders } | "no answer">((resolve) => {
    const req = http.request(`${opts.url}${opts.path}`, { method: opts.method, headers: { "content-type": "application/json", ...opts.headers } });
    const timer = setTimeout(() => {
      req.destroy();
      resolve("no answer");
    }, opts.waitMs ?? 3_000);
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    req.on("error", () => undefined);
    for (let sent = 0; sent < opts.send; sent += 64 * 1024) req.write(Buffer.alloc(Math.min(64 * 1024, opts.send - sent), 0x61));
    if (opts.end) req.end();
  });
}

/** The same with the runner, carrying its token. */
function rawRunner(opts: { method: string; path: string; headers?: Record<string, string>; send: number; end?: boolean }) {
  return rawExchange({ ...opts, url: runner.url, headers: { authorization: `Bearer ${runner.token}`, ...opts.headers } });
}

describe("the runner's API (RUNNER_MAX_REQUEST_BYTES)", () => {
  it("tRPC: a declared content-length over the cap is 413 at once", async () => {
    const res = await rawRunner({ method: "POST", path: "/validate", headers: { "content-length": String(100 * MB) }, send: 64 * 1024 });
    expect(res).toMatchObject({ status: 413, body: expect.stringMatching(/RUNNER_MAX_REQUEST_BYTES/) });
  });

  it("tRPC: a chunked body past the setting is 413 (the setting, not a built-in 32 MB)", async () => {
    const res = await rawRunner({ method: "POST", path: "/validate", send: 2 * RUNNER_CAP, end: true });
    expect(res).toMatchObject({ status: 413 });
  });

  it("plain routes: chat with a declared body over its cap, and a GET with a body, are 413 at once", async () => {
    const chat = await rawRunner({ method: "POST", path: "/v1/chat/completions", headers: { "content-length": String(100 * MB) }, send: 64 * 1024 });
    expect(chat).toMatchObject({ status: 413 });
    const get = await rawRunner({ method: "GET", path: `/runs/${runId}/tokens.jsonl`, headers: { "content-length": "10" }, send: 10, end: true });
    expect(get).toMatchObject({ status: 413, body: expect.stringMatching(/takes no request body/) });
  });
});

describe("NUL and control characters", () => {
  it("NUL in an experiment's name or description, a run's notes or tags, a workspace or token name: 400 naming the field", async () => {
    const before = await rows();
    const cases: [string, unknown, RegExp][] = [
      ["experiments.create", { name: "a\u0000b", files: templateFiles() }, /^name: contains a NUL character \(\\u0000\)/],
      ["experiments.create", { name: "ok", description: "x\u0000", files: templateFiles() }, /^description: contains a NUL character/],
      ["experiments.rename", { id: experimentId, name: "\u0000" }, /^name: contains a NUL character/],
      ["runs.update", { id: runId, notes: "hello\u0000" }, /^notes: contains a NUL character/],
      ["runs.update", { id: runId, tags: ["ok", "b\u0000d"] }, /^tags\.1: contains a NUL character/],
      ["workspace.rename", { name: "w\u0000" }, /^name: contains a NUL character/],
      ["account.createToken", { name: "t\u0000" }, /^name: contains a NUL character/],
      ["runners.register", { name: "r\u0000", url: "http://127.0.0.1:1", token: "0123456789" }, /^name: contains a NUL character/],
    ];
    for (const [path, input, message] of cases) {
      const res = await trpcPost(path, input);
      expect(res.status, path).toBe(400);
      expect(refusal(res.body), path).toMatch(message);
    }
    expect(await rows()).toEqual(before);
  });

  it("control characters: refused in one-line fields (names, tags, runner names, webhook URLs), tab/newline allowed in notes", async () => {
    const before = await rows();
    const cases: [string, unknown, RegExp][] = [
      ["experiments.create", { name: "red \u001b[31m", files: templateFiles() }, /name: contains a control character \(U\+001B\)/],
      ["experiments.rename", { id: experimentId, name: "two\nlines" }, /name: contains a control character \(U\+000A\)/],
      ["runs.update", { id: runId, tags: ["a\rb"] }, /tags\.0: contains a control character \(U\+000D\)/],
      ["runs.update", { id: runId, notes: "bell \u0007" }, /notes: contains a control character \(U\+0007\)/],
      ["workspace.rename", { name: "tab\u000bbed" }, /name: contains a control character \(U\+000B\)/],
      ["account.createToken", { name: "ci\u007f" }, /name: contains a control character \(U\+007F\)/],
      ["runners.register", { name: "gpu\r\n1", url: "http://127.0.0.1:1", token: "0123456789" }, /name: contains a control character/],
      ["alerts.setWebhook", { url: "http://example.com/\r\nX-Evil: 1" }, /url: contains a control character/],
    ];
    for (const [path, input, message] of cases) {
      const res = await trpcPost(path, input);
      expect(res.status, path).toBe(400);
      expect(refusal(res.body), path).toMatch(message);
    }
    expect(await rows()).toEqual(before);
    // Notes are text of several lines: tabs and newlines are fine there.
    const ok = await trpcPost("runs.update", { id: runId, notes: "line 1\n\tline 2\r\n" });
    expect(ok.status).toBe(200);
    await db().run.update({ where: { id: runId }, data: { notes: before.run.notes } });
  });

  it("auth: NUL or a control character in a sign-up's name or email is 400 naming it; no user is made", async () => {
    const before = await rows();
    const signUp = (body: unknown) =>
      handleAuthRequest(
        new Request(`${ORIGIN}/api/auth/sign-up/email`, {
          method: "POST",
          headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": "10.1.2.3" },
          body: JSON.stringify(body),
        }),
        db(),
      );
    const nul = await signUp({ name: "Eve\u0000", email: "eve@example.com", password: "correct horse 1" });
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as { message: string }).message).toMatch(/^name: contains a NUL character/);
    const ctl = await signUp({ name: "Eve\u001b[2J", email: "eve@example.com", password: "correct horse 1" });
    expect(ctl.status).toBe(400);
    expect(((await ctl.json()) as { message: string }).message).toMatch(/^name: contains a control character \(U\+001B\)/);
    expect(await rows()).toEqual(before);
  });
});

describe("JSON nesting depth", () => {
  it(`config.json nested 100,000 deep: runs.start names config.json and the line, no 500, nothing written`, async () => {
    const before = await rows();
    const files = { ...templateFiles(), "config.json": `{\n  "num_steps": 1,\n  "x": ${deep(100_000)}\n}` };
    const res = await trpcPost("runs.start", { experimentId, files, kind: "dry-run", baseVersion: 1 });
    expect(res.status).toBe(200);
    const data = superjson.deserialize(res.body.result!.data as never) as { ok: boolean; diagnostics: { file: string; line: number; message: string }[] };
    expect(data.ok).toBe(false);
    expect(data.diagnostics).toEqual([expect.objectContaining({ file: "config.json", line: 3, message: expect.stringMatching(`nested deeper than ${MAX_JSON_DEPTH} levels`) })]);
    expect(await rows()).toEqual(before);
  });

  it("a tasks.jsonl row nested 100,000 deep is refused by Check (runs.start), naming tasks.jsonl line 3; no run, no version", async () => {
    const before = await rows();
    const base = templateFiles();
    const lines = base["tasks.jsonl"].trim().split("\n");
    lines.splice(2, 0, `{"word": "deep", "x": ${deep(100_000)}}`);
    const files = { ...base, "tasks.jsonl": `${lines.join("\n")}\n` };
    const res = await trpcPost("runs.start", { experimentId, files, kind: "dry-run", baseVersion: 1 });
    expect(res.status).toBe(200);
    const data = superjson.deserialize(res.body.result!.data as never) as { ok: boolean; diagnostics: { file: string; line: number; message: string }[] };
    expect(data.ok).toBe(false);
    expect(data.diagnostics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file: "tasks.jsonl", line: 3, message: expect.stringMatching(`tasks.jsonl line 3: nested deeper than ${MAX_JSON_DEPTH} levels`) }),
      ]),
    );
    expect(await rows()).toEqual(before);
  });

  it("a tRPC body or query nested deeper than the cap is 400, never a 500 (superjson walks its meta recursively)", async () => {
    const before = await rows();
    const bodies = [
      `{"json":{"name":"x","files":{}},"meta":{"values":{"name":${deep(10_000)}}}}`,
      `{"json":{"name":${deep(100_000)}}}`,
    ];
    for (const body of bodies) {
      const res = await handleTrpcRequest(
        new Request(`${ORIGIN}/api/trpc/experiments.create`, { method: "POST", headers: { "content-type": "application/json", ...auth() }, body }),
        db(),
      );
      expect(res.status).toBe(400);
      expect(((await res.json()) as TrpcBody).error!.json.message).toMatch(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    }
    const query = encodeURIComponent(`{"json":{"id":"x"},"meta":{"values":{"id":${deep(5_000)}}}}`);
    const get = await handleTrpcRequest(new Request(`${ORIGIN}/api/trpc/runs.get?input=${query}`, { headers: auth() }), db());
    expect(get.status).toBe(400);
    expect(await rows()).toEqual(before);
  });

  it("/api/v1/chat/completions: a body nested deeper than the cap is 400", async () => {
    const body = `{"model":"SmolLM2-135M-Instruct","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deepObject(100_000)}}}]}`;
    const res = await handleChatCompletions(
      new Request(`${ORIGIN}/api/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json", ...auth() }, body }),
      { db: db() },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(`nested deeper than ${MAX_JSON_DEPTH} levels`);
  });
});
