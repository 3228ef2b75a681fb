/**
 * What the ART tests and bench/art-learning.ts stand up: a fresh Postgres database, the REAL runner (in this
 * process) with its REAL engine (the server tests' shared one in vitest, its own in the bench), registered as the configured runner (an ART model's first job binds the
 * runner that serves its base model: this one), /api/art/v1, /api/tinker (and /api/v1/models) served by the route
 * handlers on a node HTTP server, and a workspace with an owner's API token. Not for production code.
 */
import type http from "node:http";
import type { AddressInfo } from "node:net";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner } from "@/server/runner-client";
import { env } from "@/server/env";
import { createTestDb, newWorkspace, userWithRole, type TestDb } from "@/server/test/harness";
import { serveFetch } from "@/server/test/serve-fetch";
import { createApiToken } from "@/features/workspace/server";
import { handleModels } from "@/features/openai-api/server";
import { handleArtRequest } from "@/features/art/server";
import { handleTinkerRequest } from "@/features/tinker/server";

export interface ArtStack {
  tdb: TestDb;
  runner: TestRunner;
  web: http.Server;
  webUrl: string;
  /** The workspace the API token acts in, and the token (`rbk_…`). */
  workspaceId: string;
  apiKey: string;
  close(): Promise<void>;
}

export async function startArtStack(opts: { name: string; runnerToken: string }): Promise<ArtStack> {
  const tdb = await createTestDb();
  const db = tdb.handle.prisma;
  const runner = await startTestRunner({ name: opts.name, token: opts.runnerToken, engine: "shared" });
  await registerRunner(db, { name: env().RUNNER_NAME, url: runner.server.url, token: opts.runnerToken });
  const workspaceId = await newWorkspace(db);
  const apiKey = (await createApiToken(db, { userId: (await userWithRole(db, workspaceId, "owner")).id, workspaceId, name: opts.name })).token;
  const web = await serveFetch(async (request, url) => {
    if (url.pathname === "/api/v1/models") return handleModels(request, { db });
    if (url.pathname.startsWith("/api/tinker/")) return handleTinkerRequest(request, url.pathname.replace(/^\/api\/tinker\/?/, "").split("/").filter(Boolean), { db });
    const segments = url.pathname.replace(/^\/api\/art\/v1\/?/, "").split("/").filter(Boolean);
    return url.pathname.startsWith("/api/art/v1/") ? handleArtRequest(request, segments, { db }) : new Response("no route", { status: 404 });
  });
  const webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  return {
    tdb,
    runner,
    web,
    webUrl,
    workspaceId,
    apiKey,
    close: async () => {
      await new Promise<void>((r) => web.close(() => r()));
      await runner.close();
      await tdb.drop();
    },
  };
}
