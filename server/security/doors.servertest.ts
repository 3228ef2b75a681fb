/**
 * Issue 29, item 7 ("every door answers bad input with a 400 naming the field"), tried as an attacker would,
 * through the real handlers (the ART door /api/art/v1, /api/v1, tRPC) on a real Postgres:
 *
 * - NUL, control characters, bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069) and the line and
 *   paragraph separators (U+2028, U+2029) in one-line fields are 400 naming the field, never a 500;
 * - `__proto__`, `constructor`, `prototype` keys are refused where user JSON is merged (ART's experimental_config,
 *   config.json), naming the key, instead of being silently dropped;
 * - every ART training number is finite and in its documented range (1e308, -1, NaN, Infinity), checked before
 *   "a job is running" (409);
 * - a tRPC refusal's message is "field: message", not zod's issue array as JSON;
 * - every refusal leaves the rows as they were.
 *
 *   npx vitest run --project server server/security/doors.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import superjson from "superjson";
import { handleTrpcRequest } from "../http/trpc-handler";
import { handleAuthRequest } from "../http/auth-handler";
import { handleChatCompletions } from "@/features/openai-api/server";
import { handleArtRequest } from "@/features/art/server";
import { createApiToken, ensureDefaultExperiment } from "@/features/workspace/server";
import { createRunningRun, createTestDb, newWorkspace, templateFiles, userWithRole, type TestDb } from "../test/harness";

const ORIGIN = "http://127.0.0.1:3000";
let tdb: TestDb;
let ws: string;
let token: string;
let experimentId: string;
let runId: string;
/** One model for logging, one for training jobs: a logged train step would make every job a 409. */
let logModel: string;
let modelId: string;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  ws = await newWorkspace(db());
  const owner = await userWithRole(db(), ws, "owner");
  token = (await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "doors" })).token;
  experimentId = (await ensureDefaultExperiment(db(), ws)).id;
  runId = await createRunningRun(db(), ws);
  const model = async (name: string) => {
    const created = await art("POST", "/preview/models", { project: "doors", name, base_model: "SmolLM2-135M-Instruct" });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    return (created.json as { id: string }).id;
  };
  logModel = await model("logs");
  modelId = await model("trains");
});
afterAll(async () => {
  await tdb?.drop();
});

/** Everything a refusal must leave as it was. */
async function rows() {
  const [users, workspaces, experiments, versions, runs, events, trajectories, jobs, run] = await Promise.all([
    db().user.count(),
    db().workspace.count(),
    db().experiment.count(),
    db().experimentVersion.count(),
    db().run.count(),
    db().runEvent.count(),
    db().trajectory.count(),
    db().artTrainingJob.count(),
    db().run.findUniqueOrThrow({ where: { id: runId }, select: { tags: true, notes: true } }),
  ]);
  return { users, workspaces, experiments, versions, runs, events, trajectories, jobs, run };
}

/** An ART request; `body` as a string is sent as it is (JSON text a JS object literal cannot hold: __proto__, NaN). */
async function art(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; message: string }> {
  const url = new URL(`http://x/api/art/v1${path}`);
  const raw = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const req = new Request(url, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: raw });
  const res = await handleArtRequest(req, url.pathname.split("/").slice(4).filter(Boolean), { db: db() });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as unknown) : null;
  return { status: res.status, json, message: (json as { error?: { message?: string } } | null)?.error?.message ?? text };
}

type TrpcBody = { error?: { json: { message: string; data: { code: string; httpStatus: number; issues: string[] | null } } }; result?: { data: unknown } };

async function trpcPost(path: string, input: unknown) {
  const req = new Request(`${ORIGIN}/api/trpc/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(superjson.serialize(input)),
  });
  const res = await handleTrpcRequest(req, db());
  return { status: res.status, body: (await res.json()) as TrpcBody };
}

/** A trajectory group ART's client would send: two trajectories with a sampled reply each. */
function groups() {
  const t = (reward: number) => ({
    messages_and_choices: [
      { role: "user", content: "Say apple." },
      { finish_reason: "stop", index: 0, logprobs: null, message: { role: "assistant", content: reward ? "apple" : "no" } },
    ],
    reward,
    metrics: {},
    metadata: {},
    logs: [],
  });
  return [{ trajectories: [t(1), t(0)], exceptions: [], metadata: {}, metrics: {}, logs: [] }];
}

/** One-line field hazards and what the refusal must say. */
const LINE_HAZARDS: [string, RegExp][] = [
  ["\u0000", /contains a NUL character \(\\u0000\)/],
  ["\u001b[31m", /contains a control character \(U\+001B\)/],
  ["\n", /contains a control character \(U\+000A\)/],
  ["\u202e", /contains a bidirectional control character \(U\+202E\)/],
  ["\u202a", /contains a bidirectional control character \(U\+202A\)/],
  ["\u2066", /contains a bidirectional control character \(U\+2066\)/],
  ["\u2069", /contains a bidirectional control character \(U\+2069\)/],
  ["\u2028", /contains a line or paragraph separator \(U\+2028\)/],
  ["\u2029", /contains a line or paragraph separator \(U\+2029\)/],
];

describe("the ART door: text in one-line fields", () => {
  it("NUL, control characters, bidi controls and separators in project, name, entity, base_model: 400 naming the field, nothing written", async () => {
    const before = await rows();
    for (const field of ["project", "name", "entity", "base_model"]) {
      for (const [hazard, message] of LINE_HAZARDS) {
        const body = { project: "p", name: "n", base_model: "SmolLM2-135M-Instruct", [field]: `a${hazard}b` };
        const res = await art("POST", "/preview/models", body);
        expect(res.status, `${field} ${JSON.stringify(hazard)}: ${res.message}`).toBe(400);
        expect(res.message, field).toMatch(new RegExp(`^${field}: ${message.source}`));
        expect((res.json as { error: { param: string } }).error.param).toBe(field);
      }
    }
    expect(await rows()).toEqual(before);
  });

  it("NUL in a logged trajectory's text is 400 naming its field (Postgres cannot store it), nothing logged", async () => {
    const before = await rows();
    const g = groups();
    g[0]!.trajectories[1]!.messages_and_choices[0] = { role: "user", content: "say \u0000" };
    const res = await art("POST", `/preview/models/${logModel}/log`, { model_id: logModel, trajectory_groups: g, split: "train" });
    expect(res.status, res.message).toBe(400);
    expect(res.message).toMatch(/^trajectory_groups\[0\]\.trajectories\[1\]\.messages_and_choices\[0\]\.content: contains a NUL character/);
    const key = await art("POST", `/preview/models/${logModel}/log`, { model_id: logModel, trajectory_groups: [{ ...groups()[0], metrics: { "a\u0000": 1 } }], split: "train" });
    expect(key.status, key.message).toBe(400);
    expect(key.message).toMatch(/^trajectory_groups\[0\]\.metrics\.a\\u0000: the key contains a NUL character/);
    expect(await rows()).toEqual(before);
  });
});

describe("the ART door: keys that name a prototype", () => {
  it("__proto__, constructor, prototype in experimental_config (or anywhere in the body) are refused by name, not dropped", async () => {
    const before = await rows();
    const body = (config: string) => `{"model_id": ${JSON.stringify(modelId)}, "trajectory_groups": ${JSON.stringify(groups())}, "experimental_config": ${config}}`;
    for (const key of ["__proto__", "constructor", "prototype"]) {
      const res = await art("POST", "/preview/training-jobs", body(`{"${key}": {"learning_rate": 0.5}}`));
      expect(res.status, `${key}: ${res.message}`).toBe(400);
      expect(res.message).toMatch(new RegExp(`^experimental_config\\.${key}: `));
      expect(res.message).toMatch(/prototype/);
    }
    const create = await art("POST", "/preview/models", '{"project": "p", "name": "n", "base_model": "m", "__proto__": {"return_existing": true}}');
    expect(create.status, create.message).toBe(400);
    expect(create.message).toMatch(/^__proto__: /);
    expect(await rows()).toEqual(before);
  });
});

describe("the ART door: training numbers", () => {
  it("1e308, -1, NaN, Infinity for learning_rate, epsilon, epsilon_high, beta: 400 naming the field, even while a job is training (not 409)", async () => {
    // A job of this model is training: a valid request would be a 409, so a 400 here means validation ran first.
    const job = await db().artTrainingJob.create({ data: { runId: modelId, step: 1, status: "training" } });
    try {
      const before = await rows();
      const cases: [string, string, RegExp][] = [
        ["learning_rate", "1e308", /too big|at most/i],
        ["learning_rate", "-1", /too small|above 0/i],
        ["learning_rate", "0", /too small|above 0/i],
        ["learning_rate", "NaN", /not a finite number/],
        ["learning_rate", "Infinity", /not a finite number/],
        ["learning_rate", "-Infinity", /not a finite number/],
        ["learning_rate", "1e999", /Infinity|finite/],
        ["epsilon", "-1", /too small|at least/i],
        ["epsilon", "1e308", /too big|at most/i],
        ["epsilon_high", "1e308", /too big|at most/i],
        ["epsilon_high", "NaN", /not a finite number/],
        ["advantage_balance", "1e308", /too big|at most|leave it 0/i],
        ["kimi_k2_tau", "NaN", /not a finite number/],
        ["beta", "1e308", /not a setting this Rollbook knows|too big|at most/i],
      ];
      for (const [field, value, why] of cases) {
        const text = `{"model_id": ${JSON.stringify(modelId)}, "trajectory_groups": ${JSON.stringify(groups())}, "experimental_config": {"${field}": ${value}}}`;
        const res = await art("POST", "/preview/training-jobs", text);
        expect(res.status, `${field}=${value}: ${res.message}`).toBe(400);
        expect(res.message, `${field}=${value}`).toMatch(new RegExp(`^experimental_config\\.${field}: `));
        expect(res.message, `${field}=${value}`).toMatch(why);
      }
      expect(await rows()).toEqual(before);
      // Control: a valid config meets the running job (so the 400s above were the numbers').
      const ok = await art("POST", "/preview/training-jobs", { model_id: modelId, trajectory_groups: groups(), experimental_config: { learning_rate: 1e-5 } });
      expect(ok.status, ok.message).toBe(409);
    } finally {
      await db().artTrainingJob.delete({ where: { id: job.id } });
    }
  });

  it("a reward that is not a finite number in range is refused naming it", async () => {
    const before = await rows();
    const g = groups();
    const text = JSON.stringify({ model_id: logModel, trajectory_groups: g, split: "train" }).replace('"reward":1', '"reward":1e308');
    const res = await art("POST", `/preview/models/${logModel}/log`, text);
    expect(res.status, res.message).toBe(400);
    expect(res.message).toMatch(/^trajectory_groups\[0\]\.trajectories\[0\]\.reward: /);
    expect(await rows()).toEqual(before);
  });
});

describe("/api/v1", () => {
  it("NUL in the model name is 400 naming it, not a 500", async () => {
    const res = await handleChatCompletions(
      new Request(`${ORIGIN}/api/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify({ model: "a\u0000b", messages: [{ role: "user", content: "hi" }] }),
      }),
      { db: db() },
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^model: contains a NUL character/);
  });
});

describe("tRPC: one-line fields and the refusal's message", () => {
  it("bidi controls and separators in tags, names: 400 naming the field; the message is 'field: message', not zod's JSON", async () => {
    const before = await rows();
    for (const [hazard, why] of LINE_HAZARDS.slice(1)) {
      const cases: [string, unknown, RegExp][] = [
        ["runs.update", { id: runId, tags: [`a${hazard}b`] }, new RegExp(`^tags\\.0: ${why.source}`)],
        ["experiments.create", { name: `a${hazard}b`, files: templateFiles() }, new RegExp(`^name: ${why.source}`)],
        ["workspace.rename", { name: `a${hazard}b` }, new RegExp(`^name: ${why.source}`)],
      ];
      for (const [path, input, message] of cases) {
        const res = await trpcPost(path, input);
        expect(res.status, `${path} ${JSON.stringify(hazard)}`).toBe(400);
        expect(res.body.error!.json.message, `${path} ${JSON.stringify(hazard)}`).toMatch(message);
      }
    }
    expect(await rows()).toEqual(before);
    // Multi-line notes keep their line breaks.
    expect((await trpcPost("runs.update", { id: runId, notes: "line 1\nline 2" })).status).toBe(200);
    await db().run.update({ where: { id: runId }, data: { notes: before.run.notes } });
  });
});

describe("tRPC: a __proto__ key", () => {
  it("anywhere in an input is refused naming it (zod would drop it unseen), nothing written", async () => {
    const before = await rows();
    const body = `{"json": {"id": ${JSON.stringify(runId)}, "__proto__": {"notes": "through the prototype"}}}`;
    const res = await handleTrpcRequest(
      new Request(`${ORIGIN}/api/trpc/runs.update`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body }),
      db(),
    );
    expect(res.status).toBe(400);
    expect(((await res.json()) as TrpcBody).error!.json.message).toMatch(/^__proto__: the key "__proto__" is refused/);
    expect(await rows()).toEqual(before);
  });
});

describe("the auth door", () => {
  it("a sign-up with a __proto__ field, or a bidi override in the name, is 400 naming it; no user is made", async () => {
    const before = await rows();
    const signUp = (body: string) =>
      handleAuthRequest(
        new Request(`${ORIGIN}/api/auth/sign-up/email`, { method: "POST", headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": "10.9.9.9" }, body }),
        db(),
      );
    const proto = await signUp('{"name": "Eve", "email": "eve@example.com", "password": "correct horse 1", "__proto__": {"emailVerified": true}}');
    expect(proto.status).toBe(400);
    expect(((await proto.json()) as { message: string }).message).toMatch(/^__proto__: the key "__proto__" is refused/);
    const bidi = await signUp(JSON.stringify({ name: "Eve\u202egnp.exe", email: "eve@example.com", password: "correct horse 1" }));
    expect(bidi.status).toBe(400);
    expect(((await bidi.json()) as { message: string }).message).toMatch(/^name: contains a bidirectional control character \(U\+202E\)/);
    expect(await rows()).toEqual(before);
  });
});

describe("config.json: keys that name a prototype", () => {
  it("__proto__, constructor, prototype as keys anywhere in config.json are refused at Check naming the key; no run", async () => {
    const before = await rows();
    const base = JSON.parse(templateFiles()["config.json"]) as Record<string, unknown>;
    const configs: [string, RegExp][] = [
      [`{"num_steps": 1, "mcp": {"servers": {"__proto__": {"transport": "http", "url": "https://mcp.example.com/mcp"}}}}`, /^mcp\.servers\.__proto__: /],
      [`{"num_steps": 1, "mcp": {"servers": {"constructor": {"transport": "http", "url": "https://mcp.example.com/mcp"}}}}`, /^mcp\.servers\.constructor: /],
      [`{"num_steps": 1, "__proto__": {"num_steps": 100}}`, /^__proto__: /],
      [`{"num_steps": 1, "mcp": {"servers": {"x": {"transport": "http", "url": "https://mcp.example.com/mcp", "headers": {"prototype": "1"}}}}}`, /^mcp\.servers\.x\.headers\.prototype: /],
    ];
    for (const [config, message] of configs) {
      const text = JSON.stringify({ ...base, ...(JSON.parse(config.replace(/"(__proto__|constructor|prototype)"/g, '"$1_placeholder"')) as object) }).replace(/_placeholder"/g, '"');
      const res = await trpcPost("runs.start", { experimentId, files: { ...templateFiles(), "config.json": text }, kind: "dry-run", baseVersion: 1 });
      expect(res.status, JSON.stringify(res.body).slice(0, 400)).toBe(200);
      const data = superjson.deserialize(res.body.result!.data as never) as { ok: boolean; diagnostics?: { file: string; message: string }[] };
      expect(data.ok, config).toBe(false);
      expect(data.diagnostics!.map((d) => d.message), config).toContainEqual(expect.stringMatching(message));
      expect(data.diagnostics!.map((d) => d.message).join("\n"), config).toMatch(/prototype/);
    }
    expect(await rows()).toEqual(before);
  });
});
