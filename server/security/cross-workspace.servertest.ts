/**
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
import { RUNNER_WORKSPACE_HEADER } from "@contracts";
import { createRunnerClient, type RunnerClient } from "@/gpu-runner/src/client";
import { handleChatCompletions } from "@/features/openai-api/server";
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
