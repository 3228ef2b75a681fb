/**
 * The API over HTTP as the browser sees it (tRPC fetch adapter + superjson), against a real Postgres:
 * error shapes carry the app code, diagnostics and input issues, never a stack or an internal message;
 * no credential is 401, a page of another origin is 403, an API token works like a session.
 *   npx vitest run --project server server/http.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import superjson from "superjson";
import { appRouter } from "./routers/_app";
import { createContext } from "./trpc";
import { createTestDb, newWorkspace, userWithRole, type TestDb } from "./test/harness";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { createApiToken } from "@/features/workspace/server";
import { handleTrpcRequest } from "./http/trpc-handler";

let tdb: TestDb;
let workspaceId: string;
let token: string;
beforeAll(async () => {
  tdb = await createTestDb();
  workspaceId = await newWorkspace(tdb.handle.prisma);
  const owner = await userWithRole(tdb.handle.prisma, workspaceId, "owner");
  token = (await createApiToken(tdb.handle.prisma, { userId: owner.id, workspaceId, name: "http test" })).token;
});
afterAll(async () => {
  await tdb?.drop();
});

async function call(path: string, input: unknown, method: "GET" | "POST" = "GET", headers: Record<string, string> = { authorization: `Bearer ${token}` }) {
  const encoded = JSON.stringify(superjson.serialize(input));
  const url = method === "GET" ? `http://x/api/trpc/${path}?input=${encodeURIComponent(encoded)}` : `http://x/api/trpc/${path}`;
  const req = new Request(url, method === "POST" ? { method, body: encoded, headers: { "content-type": "application/json", ...headers } } : { method, headers });
  const res = await handleTrpcRequest(req, tdb.handle.prisma);
  const body = (await res.json()) as { result?: { data: unknown }; error?: { json: { message: string; data: Record<string, unknown> } } };
  return { status: res.status, body };
}

describe("HTTP API", () => {
  it("no credential → 401; a wrong or revoked token → 401; a page of another origin → 403", async () => {
    expect((await call("experiments.list", undefined, "GET", {})).status).toBe(401);
    expect((await call("runs.start", { experimentId: "x", files: {}, kind: "train" }, "POST", {})).status).toBe(401);
    expect((await call("experiments.list", undefined, "GET", { authorization: "Bearer rbk_not-a-token" })).status).toBe(401);
    const evil = await call("experiments.list", undefined, "GET", { authorization: `Bearer ${token}`, origin: "http://127.0.0.1:8080" });
    expect(evil.status).toBe(403);
    // The page's own origin is fine.
    expect((await call("experiments.list", undefined, "GET", { authorization: `Bearer ${token}`, origin: "http://127.0.0.1:3000" })).status).toBe(200);
    const owner = await userWithRole(tdb.handle.prisma, workspaceId, "owner");
    const revoked = await createApiToken(tdb.handle.prisma, { userId: owner.id, workspaceId, name: "to revoke" });
    await tdb.handle.prisma.apiToken.update({ where: { id: revoked.id }, data: { revokedAt: new Date() } });
    expect((await call("experiments.list", undefined, "GET", { authorization: `Bearer ${revoked.token}` })).status).toBe(401);
  });

  it("serves data through superjson (dates survive)", async () => {
    await ensureDefaultExperiment(tdb.handle.prisma, workspaceId);
    const { status, body } = await call("experiments.list", undefined);
    expect(status).toBe(200);
    const list = superjson.deserialize(body.result!.data as never) as { updatedAt: Date }[];
    expect(list[0]!.updatedAt).toBeInstanceOf(Date);
  });

  it("maps AppError NOT_FOUND to 404 with appCode and no stack", async () => {
    const { status, body } = await call("runs.get", { id: "nope" });
    expect(status).toBe(404);
    expect(body.error!.json.message).toBe("run nope not found");
    expect(body.error!.json.data).toMatchObject({ code: "NOT_FOUND", appCode: "NOT_FOUND" });
    expect(JSON.stringify(body)).not.toMatch(/stack|\.ts:\d+/);
  });

  it("bad input is BAD_REQUEST with one readable issue per problem", async () => {
    const { status, body } = await call("experiments.save", { id: "x", files: { "scenario.ts": 1 } }, "POST");
    expect(status).toBe(400);
    expect(body.error!.json.data.issues).toEqual(expect.arrayContaining([expect.stringMatching(/^files\.scenario\.ts: /)]));
  });

  it("saves a 5 MB experiment in one POST body, and refuses 9 MB naming the cap", async () => {
    const { id } = await ensureDefaultExperiment(tdb.handle.prisma, workspaceId);
    const { body: got } = await call("experiments.get", { id });
    const files = (superjson.deserialize(got.result!.data as never) as { version: { files: Record<string, string> } }).version.files;
    const big = { ...files, "tasks.jsonl": `${JSON.stringify({ word: "x".repeat(100) })}\n`.repeat(50_000), "lib/extra.ts": "export const n = 1;\n" };
    expect(big["tasks.jsonl"].length).toBeGreaterThan(5_000_000);
    const saved = await call("experiments.save", { id, files: big }, "POST");
    expect(saved.status).toBe(200);
    const back = await call("experiments.get", { id });
    const stored = (superjson.deserialize(back.body.result!.data as never) as { version: { files: Record<string, string> } }).version.files;
    expect(stored["tasks.jsonl"]).toBe(big["tasks.jsonl"]);
    expect(stored["lib/extra.ts"]).toBe("export const n = 1;\n");

    const tooBig = await call("experiments.save", { id, files: { ...files, "tasks.jsonl": "x".repeat(9_000_000) } }, "POST");
    expect(tooBig.status).toBe(400);
    expect(JSON.stringify(tooBig.body.error!.json.data.issues)).toContain("the limit is 8 MB");
  });

  it("an unexpected failure is a bare 'Internal server error'", async () => {
    // A closed database makes Prisma throw with connection details; none of that may reach the client.
    const other = await createTestDb();
    await other.drop();
    const req = new Request("http://x/api/trpc/experiments.list");
    const res = await fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router: appRouter,
      createContext: () =>
        createContext({ db: other.handle.prisma, principal: { user: { id: "u", email: "u@x", name: "u" }, tokenWorkspaceId: null, via: "session" }, workspaceId: "w" }),
      onError: () => {},
    });
    const body = (await res.json()) as { error: { json: { message: string; data: Record<string, unknown> } } };
    expect(res.status).toBe(500);
    expect(body.error.json.message).toBe("Internal server error");
    expect(body.error.json.data.appCode).toBeNull();
  });
});
