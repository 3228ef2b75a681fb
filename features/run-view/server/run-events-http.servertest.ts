/**
 * GET /api/runs/<id>/events (the run page's first load): the same events as tRPC runs.events, in pages,
 * with the headers the client pipelines on; another workspace's run is 404, bad paging a 400 naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, createRunningRun, createTestDb, newWorkspace, runEvents, userWithRole, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { createApiToken } from "@/features/workspace/server";
import { handleRunEvents } from "./run-events-http";

let t: TestDb;
let ws: string;
let runId: string;
let token: string;
let otherToken: string;
const db = () => t.handle.prisma;

beforeAll(async () => {
  t = await createTestDb();
  ws = await newWorkspace(db());
  const other = await newWorkspace(db());
  runId = await createRunningRun(db(), ws);
  await ingestEvents(db(), runId, runEvents(runId));
  token = (await createApiToken(db(), { userId: (await userWithRole(db(), ws, "viewer")).id, workspaceId: ws, name: "t" })).token;
  otherToken = (await createApiToken(db(), { userId: (await userWithRole(db(), other, "owner")).id, workspaceId: other, name: "o" })).token;
}, 180_000);
afterAll(async () => t?.drop());

const get = (query: string, as = token, id = runId) =>
  handleRunEvents(new Request(`http://127.0.0.1/api/runs/${id}/events${query}`, { headers: { authorization: `Bearer ${as}` } }), id, { db: db() });

describe("GET /api/runs/<id>/events", () => {
  it("returns exactly what runs.events returns, and pages with x-count / x-last-seq", async () => {
    const viaTrpc = await callerFor(db(), ws).runs.events({ runId, afterSeq: 0, limit: 2000 });
    const all = await get("");
    expect(all.status).toBe(200);
    expect(await all.json()).toEqual(viaTrpc);

    const first = await get("?after=0&limit=5");
    expect(first.headers.get("x-count")).toBe("5");
    expect(first.headers.get("x-last-seq")).toBe("5");
    expect(((await first.json()) as { seq: number }[]).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    const rest = await get("?after=5&limit=5000");
    expect(Number(rest.headers.get("x-count"))).toBe(viaTrpc.length - 5);
    const end = await get(`?after=${viaTrpc.length}`);
    expect(await end.json()).toEqual([]);
    expect(end.headers.get("x-count")).toBe("0");
  });

  it("is 404 for another workspace's run and 400 for bad paging", async () => {
    expect((await get("", otherToken)).status).toBe(404);
    const bad = await get("?after=-1");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^after:/);
    const big = await get("?limit=999999");
    expect(big.status).toBe(400);
    expect(((await big.json()) as { error: { message: string } }).error.message).toMatch(/^limit:/);
    expect((await handleRunEvents(new Request(`http://127.0.0.1/api/runs/${runId}/events`), runId, { db: db() })).status).toBe(401);
  });
});
