/**
 * The run page's first load of summaries and its reads of whole rollouts, on real Postgres through real ingestion:
 * GET /api/runs/<id>/events?view=summary gives each rollout exactly what the page's own summariseTrajectory makes of
 * it (the SQL and the TypeScript agree: a reply cut at 200 characters across an emoji, a tool-call-only reply, none
 * at all); GET …/rollouts?seqs= gives the stored trajectories whole, ?q= searches what the summaries left out;
 * another workspace's member gets 404, bad parameters a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunEvent, servedEvent, type Trajectory } from "@contracts";
import { createRunningRun, createTestDb, newWorkspace, runEvents, trajectory, userWithRole, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { createApiToken } from "@/features/workspace/server";
import { summariseTrajectory } from "../rollout-summary";
import { handleRunEvents } from "./run-events-http";
import { handleRollouts } from "./rollouts-http";

let t: TestDb;
let runId: string;
let token: string;
let otherToken: string;
let log: RunEvent[];
const db = () => t.handle.prisma;

/** Rollouts whose summaries exercise every branch of the reply preview. */
function edgeCases(): Trajectory[] {
  const base = trajectory(0, 2, 1);
  const long = `${"x".repeat(199)}😀 and then 50% of_the rest ${"y".repeat(300)}`;
  return [
    { ...base, id: "long", messages: [{ role: "user", content: "Long please" }, { role: "assistant", content: long }], logs: ["a log line"], output: { answer: 1 } },
    {
      ...base,
      id: "tools-only",
      messages: [
        { role: "user", content: "call" },
        { role: "assistant", content: "thinking first" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: '{"a":"PARIS"}' } }, { id: "c2", type: "function", function: { name: "mul", arguments: "{}" } }] },
        { role: "tool", content: "3", tool_call_id: "c1" },
      ],
      turns: [{ message_index: 2, prompt_tokens: 5, completion_tokens: 4, model_ms: 3, finish_reason: "tool_calls" }],
    },
    { ...base, id: "no-reply", messages: [{ role: "user", content: "nothing" }, { role: "assistant", content: "" }], task: "a plain string task" },
  ];
}

beforeAll(async () => {
  t = await createTestDb();
  const ws = await newWorkspace(db());
  const other = await newWorkspace(db());
  runId = await createRunningRun(db(), ws);
  const base = runEvents(runId);
  const extra = edgeCases().map((p, i) => RunEvent.parse({ run_id: runId, seq: base.length + i, ts: 1_700_000_100_000 + i, type: "rollout.finished", payload: p }));
  // Before run.finished: the edge cases take its seq and it moves to the end.
  const finished = base.pop()!;
  log = [...base, ...extra, { ...finished, seq: base.length + extra.length + 1 }];
  await ingestEvents(db(), runId, log);
  token = (await createApiToken(db(), { userId: (await userWithRole(db(), ws, "viewer")).id, workspaceId: ws, name: "t" })).token;
  otherToken = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "o" })).token;
}, 180_000);
afterAll(async () => t?.drop());

const req = (path: string, as: string | null = token) =>
  new Request(`http://127.0.0.1/api/runs/${runId}/${path}`, { headers: as ? { authorization: `Bearer ${as}` } : {} });
const rollouts = (query: string, as: string | null = token) => handleRollouts(req(`rollouts${query}`, as), runId, { db: db() });
const rolloutEvents = () => log.filter((e): e is Extract<RunEvent, { type: "rollout.finished" }> => e.type === "rollout.finished");

describe("GET /api/runs/<id>/events?view=summary", () => {
  it("sends each rollout as summariseTrajectory makes it, every other event as it is served (a checkpoint without its path)", async () => {
    const res = await handleRunEvents(req("events?view=summary"), runId, { db: db() });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { seq: number; type: string; payload: unknown }[];
    expect(page.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    for (const [i, e] of log.entries()) {
      const got = page[i]!;
      expect(got.payload).toEqual(e.type === "rollout.finished" ? summariseTrajectory(e.payload) : JSON.parse(JSON.stringify(servedEvent(e).payload)));
    }
    const replies = Object.fromEntries(page.filter((e) => e.type === "rollout.finished").map((e) => [(e.payload as { id: string }).id, (e.payload as { reply: string }).reply]));
    expect(Array.from(replies.long!)).toHaveLength(200);
    expect(replies.long!.endsWith("😀")).toBe(true);
    expect(replies["tools-only"]).toBe("→ add, mul");
    expect(replies["no-reply"]).toBe("");
    expect((await handleRunEvents(req("events?view=tiny"), runId, { db: db() })).status).toBe(400);
  });
});

describe("GET /api/runs/<id>/rollouts", () => {
  it("gives the stored trajectories whole by seq (with their seq), in seq order, leaving out seqs that carry no rollout", async () => {
    const want = rolloutEvents().filter((e) => ["long", "tools-only", "traj-1-2"].includes(e.payload.id));
    const asked = [...want.map((e) => e.seq), 1].reverse();
    const res = await rollouts(`?seqs=${asked.join(",")}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(want.map((e) => ({ ...JSON.parse(JSON.stringify(e.payload)), seq: e.seq })));
  });

  it("searches messages, tool calls, the task and the error, case-insensitively and literally", async () => {
    const seqOf = (id: string) => rolloutEvents().find((e) => e.payload.id === id)!.seq;
    const search = async (q: string) => ((await (await rollouts(`?q=${encodeURIComponent(q)}`)).json()) as { seqs: number[]; through: number });
    expect((await search("paris")).seqs).toEqual([seqOf("tools-only")]);
    expect((await search("MUL")).seqs).toEqual([seqOf("tools-only")]);
    expect((await search("plain STRING")).seqs).toEqual([seqOf("no-reply")]);
    expect((await search("boom")).seqs).toEqual([seqOf("traj-0-3")]);
    expect((await search("50% of_the")).seqs).toEqual([seqOf("long")]);
    expect((await search("5_% ")).seqs).toEqual([]);
    const all = await search("say w");
    expect(all.seqs).toEqual(rolloutEvents().filter((e) => e.payload.id.startsWith("traj-")).map((e) => e.seq));
    expect(all.through).toBe(Math.max(...rolloutEvents().map((e) => e.seq)));
  });

  it("is 404 for another workspace's member, 401 without a token, 400 for bad parameters", async () => {
    const seq = rolloutEvents()[0]!.seq;
    expect((await rollouts(`?seqs=${seq}`, otherToken)).status).toBe(404);
    expect((await rollouts(`?q=boom`, otherToken)).status).toBe(404);
    expect((await rollouts(`?seqs=${seq}`, null)).status).toBe(401);
    for (const bad of ["", "?seqs=1&q=x", "?seqs=1,x", `?seqs=${Array.from({ length: 501 }, (_, i) => i + 1).join(",")}`, "?q=%20"]) {
      const res = await rollouts(bad);
      expect(res.status, bad).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/^(seqs|q|seqs or q):/);
    }
  });
});
