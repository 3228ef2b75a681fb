/**
 * socket.io realtime against a real Postgres: subscribe after seq N → the stored tail in order, the status,
 * then live events as ingestion stores them; with dedupe by seq the client sees every event exactly once.
 *   npx vitest run --project server server/realtime/socket.servertest.ts
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Server } from "socket.io";
import { io as connect, type Socket } from "socket.io-client";
import { servedEvent, type ServedRunEvent } from "@contracts";
import { ingestAndEmit } from "@/features/run-lifecycle/server";
import { createApiToken } from "@/features/workspace/server";
import { removeMember } from "@/features/workspace/server";
import { createRunningRun, createTestDb, newWorkspace, runEvents, userWithRole, type TestDb } from "../test/harness";
import { setIo, type RollbookIo } from "./io";
import { attachRealtime } from "./socket-server";
import type { ClientToServerEvents, RunFlagMessage, RunStatusMessage, ServerToClientEvents, SubscribeAck } from "@contracts/socket-events";

let tdb: TestDb;
let server: http.Server;
let io: RollbookIo;
let url: string;
let workspaceId: string;
let token: string;
const db = () => tdb.handle.prisma;

beforeAll(async () => {
  tdb = await createTestDb();
  workspaceId = await newWorkspace(db());
  server = http.createServer();
  io = new Server(server, { serveClient: false });
  setIo(io);
  attachRealtime(io, async () => db());
  const owner = await userWithRole(db(), workspaceId, "viewer");
  token = (await createApiToken(db(), { userId: owner.id, workspaceId, name: "socket test" })).token;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  setIo(undefined);
  await new Promise<void>((r) => io.close(() => r()));
  await tdb?.drop();
});

describe("run:subscribe", () => {
  it("sends the stored tail after afterSeq, then live events, with no gap", async () => {
    const runId = await createRunningRun(db(), workspaceId);
    const log = runEvents(runId);
    await ingestAndEmit(db(), runId, log.slice(0, 6));

    const client: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], auth: { token } });
    const got = new Map<number, ServedRunEvent>();
    const statuses: RunStatusMessage[] = [];
    client.on("run:event", (e) => got.set(e.seq, e));
    client.on("run:status", (s) => statuses.push(s));
    const ack = await new Promise<SubscribeAck>((resolve) => client.emit("run:subscribe", { runId, afterSeq: 2 }, resolve));
    expect(ack).toEqual({ ok: true, lastSeq: 6, status: "running", attempt: 1 });
    expect([...got.keys()]).toEqual([3, 4, 5, 6]);
    expect(statuses.at(-1)).toMatchObject({ runId, status: "running", lastSeq: 6 });

    // Live: the rest, in two batches (one re-delivering already stored events).
    await ingestAndEmit(db(), runId, log.slice(4, 10));
    await ingestAndEmit(db(), runId, log.slice(10));
    const deadline = Date.now() + 5_000;
    while (got.size < log.length - 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect([...got.keys()].sort((a, b) => a - b)).toEqual(log.slice(2).map((e) => e.seq));
    expect(got.get(log.length)).toEqual(log.at(-1));
    // Replayed or live, a checkpoint comes without its path on the runner's disk (contracts/run.ts, ServedRunEvent).
    const checkpoints = log.filter((e) => e.type === "checkpoint.saved");
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const e of checkpoints) expect(got.get(e.seq)).toEqual(servedEvent(e));
    expect(JSON.stringify([...got.values()])).not.toContain("/checkpoints/");
    expect(statuses.at(-1)).toMatchObject({ status: "completed", lastSeq: log.length });

    const bad = await new Promise<SubscribeAck>((resolve) => client.emit("run:subscribe", { runId: "missing-run", afterSeq: 0 }, resolve));
    expect(bad).toEqual({ ok: false, error: "run missing-run not found" });
    client.close();
  });
});

describe("run:flag", () => {
  it("a pathology flag raised by ingestion reaches the run's subscribers", async () => {
    const runId = await createRunningRun(db(), workspaceId);
    const client: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], auth: { token } });
    const flags: RunFlagMessage[] = [];
    client.on("run:flag", (f) => flags.push(f));
    await new Promise<SubscribeAck>((resolve) => client.emit("run:subscribe", { runId, afterSeq: 0 }, resolve));
    // runEvents: a quarter of step 0's rollouts fail, the exception-rate rule's threshold.
    await ingestAndEmit(db(), runId, runEvents(runId));
    const deadline = Date.now() + 10_000;
    while (flags.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(flags).toEqual([expect.objectContaining({ runId, rule: "exception_rate", firstStep: 0, steps: [0], rolloutIds: ["traj-0-3"] })]);
    client.close();
  });
});

describe("who may listen", () => {
  it("refuses a handshake without a credential, and a run of another workspace reads as not found", async () => {
    const anon: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], reconnection: false });
    const refused = await new Promise<string>((resolve) => anon.on("connect_error", (e) => resolve(e.message)));
    expect(refused).toMatch(/unauthorized/);
    anon.close();

    const otherWs = await newWorkspace(db());
    const otherRun = await createRunningRun(db(), otherWs);
    await ingestAndEmit(db(), otherRun, runEvents(otherRun).slice(0, 3));
    const client: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], auth: { token } });
    const got: ServedRunEvent[] = [];
    client.on("run:event", (e) => got.push(e));
    const ack = await new Promise<SubscribeAck>((resolve) => client.emit("run:subscribe", { runId: otherRun, afterSeq: 0 }, resolve));
    expect(ack).toEqual({ ok: false, error: `run ${otherRun} not found` });
    // Nothing of the other workspace's run leaks, now or when it gets new events.
    await ingestAndEmit(db(), otherRun, runEvents(otherRun).slice(3, 6));
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toEqual([]);

    // A revoked token no longer opens a socket.
    await db().apiToken.updateMany({ where: { workspaceId }, data: { revokedAt: new Date() } });
    const revoked: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], auth: { token }, reconnection: false });
    expect(await new Promise<string>((resolve) => revoked.on("connect_error", (e) => resolve(e.message)))).toMatch(/unauthorized/);
    revoked.close();
    client.close();
  });
});

describe("leaving a workspace", () => {
  it("a removed member's open page stops receiving the workspace's run at once", async () => {
    const viewer = await userWithRole(db(), workspaceId, "viewer");
    const viewerToken = (await createApiToken(db(), { userId: viewer.id, workspaceId, name: "viewer page" })).token;
    const runId = await createRunningRun(db(), workspaceId);
    const log = runEvents(runId);
    await ingestAndEmit(db(), runId, log.slice(0, 2));
    const page: Socket<ServerToClientEvents, ClientToServerEvents> = connect(url, { transports: ["websocket"], auth: { token: viewerToken } });
    const got = new Set<number>();
    page.on("run:event", (e) => got.add(e.seq));
    expect(await new Promise<SubscribeAck>((resolve) => page.emit("run:subscribe", { runId, afterSeq: 0 }, resolve))).toMatchObject({ ok: true });
    await ingestAndEmit(db(), runId, log.slice(2, 4));
    const deadline = Date.now() + 5_000;
    while (got.size < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect([...got].sort((a, b) => a - b)).toEqual([1, 2, 3, 4]);

    const owner = await userWithRole(db(), workspaceId, "owner");
    await removeMember(db(), { workspaceId, actorId: owner.id, actorRole: "owner", userId: viewer.id });
    await ingestAndEmit(db(), runId, log.slice(4, 8));
    await new Promise((r) => setTimeout(r, 300));
    expect(Math.max(...got)).toBe(4);
    page.close();
  });
});

