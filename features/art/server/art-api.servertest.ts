/**
 * The ART API (slice 1) against a real Postgres, called as the route calls it (handleArtRequest with the
 * request and its path): models, logged groups → steps, rollouts, events and series; concurrent logs; another
 * workspace; bad and oversized bodies; the client's silence (lost) and return; DELETE → stopped.
 *   npx vitest run --project server features/art/server/art-api.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDb, newWorkspace, userWithRole, callerFor, type TestDb } from "@/server/test/harness";
import { createApiToken } from "@/features/workspace/server";
import { IngestService } from "@/features/run-lifecycle/server";
import { MAX_ART_REQUEST_BYTES } from "@/server/http/body-limit";
import { runMetricsCsv, runTrajectoriesJsonl } from "@/features/runs/server/run-export";
import { flagStalledRuns } from "@/features/flags/server/notify/watcher";
import { handleArtRequest } from "./art-api";
import { artIdleSince } from "../art-idle";

let tdb: TestDb;
let ws: string;
let token: string;
let viewerToken: string;
let otherToken: string;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  ws = await newWorkspace(db());
  const owner = await userWithRole(db(), ws, "owner");
  token = (await createApiToken(db(), { userId: owner.id, workspaceId: ws, name: "art laptop" })).token;
  const viewer = await userWithRole(db(), ws, "viewer");
  viewerToken = (await createApiToken(db(), { userId: viewer.id, workspaceId: ws, name: "viewer" })).token;
  const other = await newWorkspace(db());
  const otherOwner = await userWithRole(db(), other, "owner");
  otherToken = (await createApiToken(db(), { userId: otherOwner.id, workspaceId: other, name: "other" })).token;
});
afterAll(async () => {
  await tdb?.drop();
});

async function art(method: string, path: string, body?: unknown, bearer = token): Promise<{ status: number; json: unknown }> {
  const url = new URL(`http://x/api/art/v1${path}`);
  const raw = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  const req = new Request(url, { method, headers: { authorization: `Bearer ${bearer}`, ...(raw ? { "content-type": "application/json" } : {}) }, body: raw });
  const res = await handleArtRequest(req, url.pathname.split("/").slice(4).filter(Boolean), { db: db() });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** A trajectory as ART's model_dump(mode="json") writes it: prompt dicts, a Choice with a tool call and logprobs, a tool result, a Choice. */
function trajectory(reward: number, word = "apple") {
  const choice = (content: string | null, tool = false) => ({
    finish_reason: tool ? "tool_calls" : "stop",
    index: 0,
    logprobs: { content: (content ?? "x").split(" ").map((t) => ({ token: t, logprob: -0.5, bytes: [120], top_logprobs: [] })), refusal: null },
    message: {
      content,
      refusal: null,
      role: "assistant",
      annotations: null,
      audio: null,
      function_call: null,
      tool_calls: tool ? [{ id: "call_1", function: { arguments: `{"word":"${word}"}`, name: "lookup" }, type: "function" }] : null,
    },
  });
  return {
    messages_and_choices: [
      { role: "system", content: "Answer with the word." },
      { role: "user", content: [{ type: "text", text: `Say ${word}.` }] },
      choice(null, true),
      { role: "tool", tool_call_id: "call_1", content: word },
      choice(reward > 0 ? word : "no"),
    ],
    tools: null,
    additional_histories: [],
    reward,
    initial_policy_version: null,
    final_policy_version: null,
    metrics: { exact: reward > 0, duration: 0.25 },
    metadata: { word },
    logs: [],
  };
}

const groups = (rewards: number[][]) => rewards.map((g, i) => ({ trajectories: g.map((r) => trajectory(r, `w${i}`)), exceptions: [], metadata: {}, metrics: {}, logs: [] }));

async function createModel(name: string, extra: Record<string, unknown> = {}) {
  const res = await art("POST", "/preview/models", { entity: null, project: "art-proj", name, base_model: "SmolLM2-135M-Instruct", return_existing: true, ...extra });
  expect(res.status, JSON.stringify(res.json)).toBeLessThan(300);
  return res.json as { id: string; entity: string; project: string; name: string; base_model: string; run_id: string };
}

describe("ART models", () => {
  it("creates a running art run in the project's experiment, and return_existing gives the same one", async () => {
    const m = await createModel("agent-1");
    const slug = (await db().workspace.findUniqueOrThrow({ where: { id: ws } })).slug;
    expect(m).toMatchObject({ entity: slug, project: "art-proj", name: "agent-1", base_model: "SmolLM2-135M-Instruct", run_id: m.id });
    const run = await db().run.findUniqueOrThrow({ where: { id: m.id }, include: { experiment: true } });
    expect(run).toMatchObject({ kind: "art", status: "running", runnerId: null, workspaceId: ws });
    expect(run.experiment.name).toBe("art-proj");
    expect(run.artClient).toMatchObject({ project: "art-proj", name: "agent-1", tokenName: "art laptop" });
    expect(await createModel("agent-1")).toEqual(m);
    // Same name without return_existing: a conflict, not a second run.
    const dup = await art("POST", "/preview/models", { project: "art-proj", name: "agent-1", base_model: "SmolLM2-135M-Instruct" });
    expect(dup.status).toBe(409);
    // Another name is another run in the same experiment.
    const m2 = await createModel("agent-2");
    expect(m2.id).not.toBe(m.id);
    expect((await db().run.findUniqueOrThrow({ where: { id: m2.id } })).experimentId).toBe(run.experimentId);
    // runs.get shows who drives it; runs.start refuses the kind.
    const got = await callerFor(db(), ws).runs.get({ id: m.id });
    expect(got.kind).toBe("art");
    expect(got.artClient).toMatchObject({ entity: slug, project: "art-proj", name: "agent-1", tokenName: "art laptop" });
    await expect(callerFor(db(), ws).runs.start({ experimentId: run.experimentId, files: got.version.files, kind: "art" })).rejects.toThrow(/created by an OpenPipe ART client/);
    await expect(callerFor(db(), ws).runs.fork({ runId: m.id })).rejects.toThrow(/is an ART client's run/);
  });

  it("a viewer's token cannot create; a wrong entity is named", async () => {
    expect((await art("POST", "/preview/models", { project: "p", name: "n", base_model: "m" }, viewerToken)).status).toBe(403);
    const wrong = await art("POST", "/preview/models", { entity: "someone-else", project: "p", name: "n", base_model: "m" });
    expect(wrong.status).toBe(400);
    expect((wrong.json as { error: { message: string } }).error.message).toMatch(/^entity: /);
  });
});

describe("ART log", () => {
  it("train logs become steps (rollouts, step metrics, series), val becomes an eval; the events continue the run's seq", async () => {
    const m = await createModel("logger");
    expect((await art("POST", `/preview/models/${m.id}/log`, { model_id: m.id, trajectory_groups: groups([[1, 0, 1], [0, 0, 0]]), split: "train" })).status).toBe(200);
    expect((await art("POST", `/preview/models/${m.id}/log`, { model_id: m.id, trajectory_groups: groups([[1, 1], [1, 0]]), split: "train" })).status).toBe(200);
    expect((await art("POST", `/preview/models/${m.id}/log`, { model_id: m.id, trajectory_groups: groups([[1, 0]]), split: "val" })).status).toBe(200);

    const run = await db().run.findUniqueOrThrow({ where: { id: m.id } });
    expect(run).toMatchObject({ status: "running", currentStep: 2, rolloutCount: 12, lastSeq: 1 + 7 + 5 + 3 });
    const events = await db().runEvent.findMany({ where: { runId: m.id }, orderBy: { seq: "asc" } });
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 16 }, (_, i) => i + 1));
    expect(events.map((e) => e.type)).toEqual([
      "run.started",
      ...Array(6).fill("rollout.finished"),
      "step.finished",
      ...Array(4).fill("rollout.finished"),
      "step.finished",
      ...Array(2).fill("rollout.finished"),
      "eval.finished",
    ]);
    const steps = await db().step.findMany({ where: { runId: m.id }, orderBy: { step: "asc" } });
    expect(steps.map((s) => s.step)).toEqual([1, 2]);
    expect(steps[0]!.metrics).toMatchObject({ step: 1, rollouts: 6, groups_trainable: 1, reward_mean: 2 / 6, exception_rate: 0 });

    const c = callerFor(db(), ws);
    const traj = await c.runs.trajectories({ runId: m.id, step: 1 });
    expect(traj.items).toHaveLength(6);
    const t = traj.items[0]!;
    expect(t).toMatchObject({ step: 1, group: 0, split: "train", reward: 1, metrics: { exact: 1, duration: 0.25 }, task: { word: "w0" } });
    // The transcript: prompt, the tool-calling turn (its call kept), the tool result, the answer.
    expect(t.messages.map((x) => x.role)).toEqual(["system", "user", "assistant", "tool", "assistant"]);
    expect(t.messages[1]!.content).toBe("Say w0.");
    expect(t.messages[2]!.tool_calls?.[0]?.function).toEqual({ name: "lookup", arguments: '{"word":"w0"}' });
    expect(t.messages[4]!.content).toBe("w0");
    // What ART does not send is unknown, not 0: the prompt's count, the model time; the duration is its metric.
    expect(t.tokens).toEqual({ prompt: null, completion: 2 });
    expect(t.timings).toMatchObject({ duration_ms: 250, model_ms: null });
    expect(steps[0]!.metrics).toMatchObject({ rollout_s: null, train_s: null, step_s: null, tokens_per_s: null });
    // Each sampled reply is a turn of the event's rollout (its tokens counted from its logprobs).
    const first = events.find((e) => e.type === "rollout.finished")!.payload as { turns: { message_index: number; completion_tokens: number }[] };
    expect(first.turns).toEqual([expect.objectContaining({ message_index: 2, completion_tokens: 1 }), expect.objectContaining({ message_index: 4, completion_tokens: 1 })]);
    const val = await c.runs.trajectories({ runId: m.id, split: "val" });
    expect(val.items.map((x) => x.step)).toEqual([2, 2]);
    const got = await c.runs.get({ id: m.id });
    expect(got.steps.map((s) => s.step)).toEqual([1, 2]);
    expect(got.evals).toEqual([expect.objectContaining({ step: 2, rollouts: 2, reward_mean: 0.5 })]);
    expect(got.rewardMean).toBeCloseTo(0.5);
    // The runs table names it by its model (run-name.ts), not "art-proj v1" as every model of the project would read;
    // its unknown tokens/s is left out of the summary (the column shows —), not 0.
    const row = (await c.runs.list({ experimentId: run.experimentId })).items.find((x) => x.id === m.id)!;
    expect(row).toMatchObject({ kind: "art", artName: "logger", experimentName: "art-proj" });
    expect(row.summary.tokens_per_s).toBeUndefined();

    // The charts read the same series as a scenario run's: reward per step, the trajectories' metrics.
    const series = await c.runs.series({ runId: m.id, x: "step", width: 400 });
    expect(series.steps).toBe(2);
    const reward = series.charts.find((x) => x.id === "reward")!;
    expect(reward.x).toEqual([1, 2]);
    expect(Object.fromEntries(reward.series.map((x) => [x.key, x.values])).mean).toEqual([2 / 6, 0.75]);
    const comps = await c.runs.series({ runId: m.id, x: "step", width: 400, keys: ["components"] });
    expect(comps.charts[0]!.series.map((x) => x.key).sort()).toEqual(["duration", "exact"]);

    // ART's get_step(): the newest checkpoint; a log-only run has none.
    const page = await art("GET", `/preview/models/${m.id}/checkpoints?order=desc&limit=1`);
    expect(page).toEqual({ status: 200, json: { object: "list", data: [], has_more: false, first_id: null, last_id: null } });
    expect((await art("DELETE", `/preview/models/${m.id}/checkpoints`, { steps: [1, 2] })).json).toEqual({ deleted_count: 0, not_found_steps: [1, 2], deferred_steps: [] });
  });

  it("compare and export read ART runs as any run", async () => {
    const a = await createModel("cmp-a");
    const b = await createModel("cmp-b");
    for (const [m, rewards] of [[a, [[1, 0], [1, 1]]], [b, [[0, 0], [1, 0]]]] as const) {
      await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups(rewards.map((g) => [...g])), split: "train" });
    }
    const c = callerFor(db(), ws);
    const cmp = await c.compare.runs({ runIds: [a.id, b.id], baselineRunId: a.id });
    expect(JSON.stringify(cmp)).toContain('"kind":"art"');
    const csv = await runMetricsCsv(db(), ws, a.id);
    expect(csv.body.split("\n").length).toBeGreaterThan(1);
    const jsonl = await runTrajectoriesJsonl(db(), ws, b.id, { tokens: false });
    const lines = (await new Response(jsonl.body).text()).trim().split("\n");
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[0]!)).toMatchObject({ step: 1, split: "train", reward: 0 });
  });

  it("two logs at once: no seq repeated or skipped, two distinct steps", async () => {
    const m = await createModel("concurrent");
    const body = { trajectory_groups: groups([[1, 0], [0, 1]]), split: "train" };
    const [a, b, c] = await Promise.all([art("POST", `/preview/models/${m.id}/log`, body), art("POST", `/preview/models/${m.id}/log`, body), art("POST", `/preview/models/${m.id}/log`, body)]);
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    const seqs = (await db().runEvent.findMany({ where: { runId: m.id }, orderBy: { seq: "asc" }, select: { seq: true } })).map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: 1 + 3 * 5 }, (_, i) => i + 1));
    expect((await db().step.findMany({ where: { runId: m.id } })).map((s) => s.step).sort()).toEqual([1, 2, 3]);
    expect((await db().run.findUniqueOrThrow({ where: { id: m.id } })).rolloutCount).toBe(12);
  });

  it("another workspace's token cannot see or log to the model: 404", async () => {
    const m = await createModel("private");
    const log = await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups([[1]]), split: "train" }, otherToken);
    expect(log.status).toBe(404);
    expect((await art("GET", `/preview/models/${m.id}/checkpoints`, undefined, otherToken)).status).toBe(404);
    expect((await art("DELETE", `/preview/models/${m.id}`, undefined, otherToken)).status).toBe(404);
    expect((await db().run.findUniqueOrThrow({ where: { id: m.id } })).lastSeq).toBe(1);
  });

  it("a bad body names the field and writes nothing", async () => {
    const m = await createModel("bad-body");
    const bad = groups([[1], [0], [1, 1]]);
    (bad[2]!.trajectories[0] as Record<string, unknown>).reward = "high";
    const res = await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: bad, split: "train" });
    expect(res.status).toBe(400);
    expect((res.json as { error: { message: string; param: string } }).error).toMatchObject({
      message: expect.stringMatching(/^trajectory_groups\[2\]\.trajectories\[0\]\.reward: expected number/),
      param: "trajectory_groups[2].trajectories[0].reward",
    });
    const badChoice = groups([[1]]);
    (badChoice[0]!.trajectories[0]!.messages_and_choices[2] as { message: { role: string } }).message.role = "user";
    const res2 = await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: badChoice, split: "train" });
    expect((res2.json as { error: { param: string } }).error.param).toBe("trajectory_groups[0].trajectories[0].messages_and_choices[2].message.role");
    expect((await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups([[1]]), split: "test" })).status).toBe(400);
    expect((await art("POST", `/preview/models/${m.id}/log`, "{not json")).status).toBe(400);
    expect((await db().run.findUniqueOrThrow({ where: { id: m.id } })).lastSeq).toBe(1);
    expect(await db().trajectory.count({ where: { runId: m.id } })).toBe(0);
  });

  it("an oversized body is refused (413) before it is parsed, and nothing is written", async () => {
    const m = await createModel("oversized");
    const big = JSON.stringify({ trajectory_groups: groups([[1]]), split: "train", pad: "x".repeat(MAX_ART_REQUEST_BYTES) });
    const res = await art("POST", `/preview/models/${m.id}/log`, big);
    expect(res.status).toBe(413);
    expect((res.json as { error: { message: string } }).error.message).toMatch(/ART endpoint.s cap = 33554432 bytes/);
    expect((await db().run.findUniqueOrThrow({ where: { id: m.id } })).lastSeq).toBe(1);
  });
});

describe("ART run lifecycle", () => {
  it("a silent client's run is lost (saying so), its next call makes it running again; DELETE ends it stopped and keeps its history", async () => {
    const m = await createModel("silent");
    await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups([[1, 0]]), split: "train" });
    // Ingestion's scan (what the web process runs) with a runner-lost threshold long past: an ART run has
    // no runner, and must be neither followed nor failed ("no runner was assigned") nor lost before its
    // client has been silent for ART_CLIENT_SILENT_MS.
    const longAgo = new Date(Date.now() - 120_000);
    const listed = async () => (await callerFor(db(), ws).runs.list({ kind: ["art"] })).items.find((x) => x.id === m.id)!;
    expect(artIdleSince(await listed(), Date.now())).toBeNull(); // it just logged
    await db().run.update({ where: { id: m.id }, data: { lastHeartbeatAt: longAgo, startedAt: longAgo, createdAt: longAgo } });
    // Quiet for ART_CLIENT_IDLE_MS: the table says idle since its last call (the status stays running).
    expect(await listed()).toMatchObject({ status: "running" });
    expect(artIdleSince(await listed(), Date.now())).toEqual(longAgo);
    const scan = (artClientSilentMs: number) =>
      new IngestService(db(), { runnerFor: () => Promise.reject(new Error("no runner")), lostAfterMs: 1_000, artClientSilentMs, log: () => {} }).scan();
    await scan(600_000);
    expect((await db().run.findUniqueOrThrow({ where: { id: m.id } })).status).toBe("running");
    expect(await db().ingestLease.count({ where: { runId: m.id } })).toBe(0);

    // Quiet past STALL_AFTER_MS but not yet lost: no stalled flag (an ART client may train for long between logs).
    expect(await flagStalledRuns(db(), 60_000)).not.toContain(m.id);

    await scan(60_000);
    expect(await flagStalledRuns(db(), 60_000)).toContain(m.id);
    const lost = await db().run.findUniqueOrThrow({ where: { id: m.id } });
    expect(lost.status).toBe("lost");
    expect(lost.lostSince?.getTime()).toBe(longAgo.getTime());
    expect(lost.error).toBe(`the ART client has sent nothing since ${longAgo.toISOString()}`);

    expect((await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups([[1, 1]]), split: "train" })).status).toBe(200);
    const back = await db().run.findUniqueOrThrow({ where: { id: m.id } });
    expect(back).toMatchObject({ status: "running", error: null, lostSince: null, currentStep: 2 });
    expect(artIdleSince(await listed(), Date.now())).toBeNull(); // it called again: not idle

    expect((await art("DELETE", `/preview/models/${m.id}`)).status).toBe(200);
    const stopped = await db().run.findUniqueOrThrow({ where: { id: m.id } });
    expect(stopped).toMatchObject({ status: "stopped", attemptOpen: false, rolloutCount: 4 });
    expect(stopped.finishedAt).not.toBeNull();
    expect((await db().runEvent.findFirst({ where: { runId: m.id }, orderBy: { seq: "desc" } }))?.type).toBe("run.finished");
    // Deleted: the client gets 404 for it; deleting again is fine; the name can be used for a new model.
    expect((await art("POST", `/preview/models/${m.id}/log`, { trajectory_groups: groups([[1]]), split: "train" })).status).toBe(404);
    expect((await art("DELETE", `/preview/models/${m.id}`)).status).toBe(200);
    expect((await createModel("silent")).id).not.toBe(m.id);
  });

  it("training jobs: a bad body names the field, an unknown job is 404, a wrong method 405; SFT jobs are 501, saying so (art-training.servertest.ts trains)", async () => {
    const empty = await art("POST", "/preview/training-jobs", { model_id: "x", trajectory_groups: [] });
    expect(empty.status).toBe(400);
    expect((empty.json as { error: { param: string } }).error.param).toBe("trajectory_groups");
    const unknown = await art("GET", "/preview/training-jobs/nope/events");
    expect(unknown.status).toBe(404);
    const method = await art("GET", "/preview/training-jobs");
    expect(method.status).toBe(405);
    const sft = await art("POST", "/preview/sft-training-jobs", { model_id: "x" });
    expect(sft.status).toBe(501);
    expect((sft.json as { error: { message: string } }).error.message).toMatch(/supervised fine-tuning \(model.train_sft\) is not supported by Rollbook.*ENGINE_MODEL/);
  });
});
