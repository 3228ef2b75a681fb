/**
 * Issue 29, finding 1: `<A's run>@２` (fullwidth), `@٢` and `@2\n` passed the web server as base model names
 * (JS's \d is ASCII) and were served by the engine as A's checkpoint (Python's \d is any digit, its $ matches
 * before a final newline). Every spelling of the shared corpus (contracts/fixtures/identifiers.jsonl) of B's
 * real checkpoint is tried from A through every door (judge.model, config.model, evalModel, fork, /api/v1,
 * /api/art/v1) and on the engine itself; finding 2 (any config.model accepted and queued forever, then listed
 * by /api/v1/models) is tried too.
 *
 * Finding 3 of issue 16, re-tried as reported: `judge.model: "<another workspace's run>@1"` was served (its
 * reply came back in the judge log), and `config.model: "<another workspace's run>@1"` was accepted and then
 * sat "queued, 1st" forever. On the real web services, the real runner and its real engine, with a real
 * checkpoint of workspace B (one GRPO step):
 *   - every field that names a model or run — config.model, judge.model, evalModel, fork, /api/v1, checkpoint
 *     chat — reads "not found" from workspace A, at Check, with no row written;
 *   - the runner refuses on its own (start, re-score, its chat route) a reference to a run of another
 *     workspace than the one the web server says it acts for;
 *   - B's own references to it work (the control: the refusals are about the workspace, not the model).
 *   npx vitest run --project server server/security/cross-workspace.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MODEL, RUNNER_WORKSPACE_HEADER } from "@contracts";
import { modelSpellings } from "@contracts/fixtures/identifier-corpus";
import { createRunnerClient, type RunnerClient } from "@/gpu-runner/src/client";
import type { EngineClient } from "@/gpu-runner/src/engine/client";
import { handleArtRequest } from "@/features/art/server";
import { handleChatCompletions, handleModels } from "@/features/openai-api/server";
import { createApiToken } from "@/features/workspace/server";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { templateFiles } from "../test/harness";
import { rowCounts, startSecurityStack, type SecurityStack, type Side } from "../test/security-stack";

let stack: SecurityStack;
let A: Side;
let B: Side;
let bRun: { id: string; number: number };
let client: RunnerClient;
const small = { groups_per_step: 1, rollouts_per_group: 2, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 8 } };

beforeAll(async () => {
  stack = await startSecurityStack("cross-workspace");
  client = createRunnerClient(stack.runner.server.url, stack.token);
  A = await stack.workspace();
  B = await stack.workspace();
  // A real checkpoint of B: one GRPO step through the web's start and the dispatcher.
  const member = await B.as("member");
  const started = await member.runs.start({ experimentId: B.experimentId, files: templateFiles({ ...small, num_steps: 1 }), kind: "train" });
  if (!started.ok) throw new Error(`start refused: ${started.error}`);
  const events = await stack.events(started.runId);
  expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
  await ingestEvents(stack.db(), started.runId, events);
  const row = await stack.db().run.findUniqueOrThrow({ where: { id: started.runId }, select: { id: true, number: true, checkpoints: { select: { step: true } } } });
  expect(row.checkpoints.map((c) => c.step)).toEqual([1]);
  bRun = { id: row.id, number: row.number };
}, 900_000);

afterAll(async () => {
  await stack?.close();
}, 60_000);

const bModel = () => `${bRun.id}@1`;

async function refused(side: Side, input: { files: ReturnType<typeof templateFiles>; kind: "dry-run" | "train" | "eval"; evalModel?: string }): Promise<string[]> {
  const member = await side.as("member");
  const before = await rowCounts(stack.db, side.id);
  const res = await member.runs.start({ experimentId: side.experimentId, ...input });
  expect(await rowCounts(stack.db, side.id)).toEqual(before);
  expect(res.ok).toBe(false);
  return res.ok ? [] : res.diagnostics.map((d) => d.message);
}

describe("another workspace's run, named from workspace A", () => {
  it("judge.model: refused at Check as not found; nothing written", async () => {
    const messages = await refused(A, { files: templateFiles({ ...small, judge: { model: bModel() } }), kind: "dry-run" });
    expect(messages).toEqual([`judge.model: model '${bModel()}' not found: no checkpoint of that run and step in this workspace`]);
  });

  it("config.model: refused at Check (a checkpoint is not a base model), never queued", async () => {
    const messages = await refused(A, { files: templateFiles({ ...small, model: bModel() }), kind: "train" });
    expect(messages).toEqual(["model: a checkpoint '<run>@<step>' is not a base model: fork that run from its checkpoint instead (run page → Fork)"]);
    expect(await stack.db().run.count({ where: { workspaceId: A.id, status: "queued" } })).toBe(0);
  });

  it("evalModel, fork and checkpoint chat: not found", async () => {
    const member = await A.as("member");
    await expect(member.runs.start({ experimentId: A.experimentId, files: templateFiles(small), kind: "eval", evalModel: bModel() })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: `evalModel: no run '${bRun.id}' in this workspace`,
    });
    await expect(member.runs.start({ experimentId: A.experimentId, files: templateFiles(small), kind: "train", fork: { parentRunId: bRun.id, parentStep: 1 } })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await expect(member.runs.fork({ runId: bRun.id, step: 1 })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(member.checkpoints.chat({ runId: bRun.id, step: 1, messages: [{ role: "user", content: "hi" }], maxTokens: 2 })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("/api/v1/chat/completions with A's token: 404 for B's checkpoint by id or by number", async () => {
    const { token } = await createApiToken(stack.db(), { userId: await A.userId("owner"), workspaceId: A.id, name: "sdk" });
    for (const model of [bModel(), `${bRun.number}@1`]) {
      const req = new Request("http://x/api/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
      });
      const res = await handleChatCompletions(req, { db: stack.db() });
      expect(res.status, model).toBe(404);
      expect(await res.text()).toContain("not found");
    }
  });
});

describe("the runner refuses on its own (defence in depth)", () => {
  it("start: judge.model, eval_model and init_from naming a run of another workspace", async () => {
    const judged = await client.start.mutate({ run_id: "x-judge", workspace_id: A.id, kind: "dry-run", files: templateFiles({ ...small, judge: { model: bModel() } }), resume: false });
    expect(judged).toMatchObject({ ok: false, error: `judge.model: model '${bModel()}' not found: no run '${bRun.id}' in this workspace` });
    const evaluated = await client.start.mutate({ run_id: "x-eval", workspace_id: A.id, kind: "eval", eval_model: bModel(), files: templateFiles(small), resume: false });
    expect(evaluated).toMatchObject({ ok: false, error: expect.stringContaining(`eval_model: model '${bModel()}' not found`) });
    const forked = await client.start.mutate({ run_id: "x-fork", workspace_id: A.id, kind: "train", init_from: { run_id: bRun.id, step: 1, load_optimizer: false }, files: templateFiles(small), resume: false });
    expect(forked).toMatchObject({ ok: false, error: expect.stringContaining("init_from: model") });
    // A run id keeps its workspace: B's run cannot be "resumed" as A's.
    const taken = await client.start.mutate({ run_id: bRun.id, workspace_id: A.id, kind: "train", files: templateFiles(small), resume: true });
    expect(taken).toMatchObject({ ok: false, error: `run ${bRun.id} belongs to another workspace on this runner` });
  });

  it("re-score: a judge.model of another workspace is refused", async () => {
    const res = await client.rescore.mutate({
      workspace_id: A.id,
      files: templateFiles({ ...small, judge: { model: bModel() } }),
      kind: "train",
      trajectories: [{ id: "t", split: "train", step: 1, group: 0, task: { word: "apple" }, output: "apple", messages: [{ role: "assistant", content: "apple" }] }],
    });
    expect(res).toMatchObject({ ok: false, error: `judge.model: model '${bModel()}' not found: no run '${bRun.id}' in this workspace` });
  });

  it("its chat route serves a checkpoint only to the workspace of its run", async () => {
    const chat = (workspace: string | null) =>
      fetch(`${stack.runner.server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/json", ...(workspace ? { [RUNNER_WORKSPACE_HEADER]: workspace } : {}) },
        body: JSON.stringify({ model: bModel(), messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
      });
    expect((await chat(A.id)).status).toBe(404);
    expect((await chat(null)).status).toBe(404);
    const own = await chat(B.id);
    expect(own.status).toBe(200);
    expect(((await own.json()) as { choices: unknown[] }).choices).toHaveLength(1);
  });
});

/** B's checkpoint in every spelling of the shared corpus that is no model name at all (`<run>@２`, `<run>@2\n`…). */
const hostileSpellings = () => modelSpellings(bRun.id).filter((l) => l.verdict === "invalid");

async function apiChat(path: "/api/v1/chat/completions" | "/api/art/v1/chat/completions", token: string, model: string): Promise<Response> {
  const req = new Request(`http://x${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
  });
  if (path === "/api/v1/chat/completions") return handleChatCompletions(req, { db: stack.db() });
  return handleArtRequest(req, ["chat", "completions"], { db: stack.db() });
}

describe("hostile spellings of B's checkpoint (issue 29, finding 1): no door serves them", () => {
  it("the corpus has the spellings the finding used, and more", () => {
    const inputs = hostileSpellings().map((l) => l.input);
    for (const s of [`${bRun.id}@\uff12`, `${bRun.id}@\u0662`, `${bRun.id}@2\n`]) expect(inputs).toContain(s);
    expect(inputs.length).toBeGreaterThan(30);
  });

  it("judge.model and config.model: refused at Check (the shared grammar), nothing written, nothing queued", async () => {
    for (const { input, why } of hostileSpellings()) {
      const judged = await refused(A, { files: templateFiles({ ...small, judge: { model: input } }), kind: "dry-run" });
      expect(judged.join(" | "), why).toMatch(/judge\.model|contains a NUL|control character/);
      const trained = await refused(A, { files: templateFiles({ ...small, model: input }), kind: "train" });
      expect(trained.join(" | "), why).toMatch(/^model|contains a NUL|control character/);
    }
    expect(await stack.db().run.count({ where: { workspaceId: A.id } })).toBe(0);
  });

  it("evalModel and fork: refused, nothing written", async () => {
    const member = await A.as("member");
    const before = await rowCounts(stack.db, A.id);
    for (const { input, why } of hostileSpellings()) {
      await expect(member.runs.start({ experimentId: A.experimentId, files: templateFiles(small), kind: "eval", evalModel: input }), why).rejects.toMatchObject({ code: "BAD_REQUEST" });
    }
    // A fork names the run by id: its hostile spellings are the run-id part of the corpus.
    for (const parentRunId of [`${bRun.id}\n`, `${bRun.id}\u200b`, `${bRun.id.toUpperCase()}`, `\u202e${bRun.id}`]) {
      await expect(member.runs.start({ experimentId: A.experimentId, files: templateFiles(small), kind: "train", fork: { parentRunId, parentStep: 1 } })).rejects.toMatchObject({ code: expect.stringMatching(/NOT_FOUND|BAD_REQUEST/) });
    }
    expect(await rowCounts(stack.db, A.id)).toEqual(before);
  });

  it("/api/v1 and /api/art/v1 with A's token: 404 (or 400) for every spelling, none listed", async () => {
    const { token } = await createApiToken(stack.db(), { userId: await A.userId("owner"), workspaceId: A.id, name: "spellings" });
    const member = await A.as("member");
    for (const { input, why } of hostileSpellings()) {
      // As the finding did it: a dry run naming the spelling as config.model first (on main this was accepted,
      // and /api/v1 then took the name for one of the workspace's base models and sent it on to the engine).
      await member.runs.start({ experimentId: A.experimentId, files: templateFiles({ ...small, model: input }), kind: "dry-run" }).catch(() => null);
      for (const path of ["/api/v1/chat/completions", "/api/art/v1/chat/completions"] as const) {
        const res = await apiChat(path, token, input);
        expect([400, 404], `${path} ${JSON.stringify(input)} (${why}): ${await res.clone().text()}`).toContain(res.status);
      }
    }
    const models = (await (await handleModels(new Request("http://x/api/v1/models", { headers: { authorization: `Bearer ${token}` } }), { db: stack.db() })).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual([DEFAULT_MODEL]);
  });

  it("the runner's chat route: every spelling refused (404; 400 for an empty name), even with B's own workspace", async () => {
    for (const { input, why } of hostileSpellings()) {
      if (input.includes("\u0000")) continue; // a NUL cannot travel in this JSON to the route's own parser (limits.servertest)
      const res = await fetch(`${stack.runner.server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.token}`, "content-type": "application/json", [RUNNER_WORKSPACE_HEADER]: B.id },
        body: JSON.stringify({ model: input, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
      });
      expect(input === "" ? 400 : 404, `${JSON.stringify(input)} (${why})`).toBe(res.status);
    }
  });
});

describe("the engine checks ownership itself (issue 29, item 2): called directly, as a runner with a parser slip would", () => {
  const engine = (): EngineClient => stack.runner.server.supervisor.client;
  const ask = (client: EngineClient, model: string) => client.chat({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 });

  it("B's checkpoint: served to B, 404 to A and to a request naming no workspace", async () => {
    const base = engine();
    await expect(ask(base.forWorkspace(B.id), bModel())).resolves.toMatchObject({ choices: [expect.anything()] });
    await expect(ask(base.forWorkspace(A.id), bModel())).rejects.toMatchObject({ status: 404 });
    await expect(ask(base, bModel())).rejects.toMatchObject({ status: 404 });
  });

  it("every hostile spelling of it is no model, for B too", async () => {
    const asB = engine().forWorkspace(B.id);
    for (const { input, why } of hostileSpellings()) {
      await expect(ask(asB, input), `${JSON.stringify(input)} (${why})`).rejects.toMatchObject({ status: expect.any(Number) });
    }
  });
});

describe("model names that exist (issue 29, finding 2): an unknown config.model is refused at Check with the served list", () => {
  it("never queued, never listed by /api/v1/models", async () => {
    const messages = await refused(A, { files: templateFiles({ ...small, model: "no-such-model" }), kind: "dry-run" });
    expect(messages).toEqual([`model: model 'no-such-model' is not served by any runner of this workspace; served: ${DEFAULT_MODEL}`]);
    const judged = await refused(A, { files: templateFiles({ ...small, judge: { model: "no-such-judge" } }), kind: "dry-run" });
    expect(judged).toEqual([`judge.model: model 'no-such-judge' is not served by any runner of this workspace; served: ${DEFAULT_MODEL}`]);
    const { token } = await createApiToken(stack.db(), { userId: await A.userId("owner"), workspaceId: A.id, name: "models" });
    const listed = (await (await handleModels(new Request("http://x/api/v1/models", { headers: { authorization: `Bearer ${token}` } }), { db: stack.db() })).json()) as { data: { id: string }[] };
    expect(listed.data.map((m) => m.id)).not.toContain("no-such-model");
    expect((await apiChat("/api/v1/chat/completions", token, "no-such-model")).status).toBe(404);
  });
});

describe("the control: workspace B names its own checkpoint", () => {
  it("as its judge: accepted at Check, served by the runner's engine, the run completes", async () => {
    const reward = `import { judgeChat, type RewardInput } from "rollbook";
export default async function reward({ output }: RewardInput<{ word: string }, string>) {
  const { content } = await judgeChat([{ role: "user", content: "Rate: " + output }], { max_tokens: 4 });
  return typeof content === "string" ? 1 : 0;
}
`;
    const member = await B.as("member");
    const started = await member.runs.start({ experimentId: B.experimentId, files: { ...templateFiles({ ...small, judge: { model: bModel() } }), "reward.ts": reward }, kind: "dry-run" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    const events = await stack.events(started.runId);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts.length).toBeGreaterThan(0);
    for (const t of rollouts) expect(t).toMatchObject({ error: null, reward: 1 });
  });
});
