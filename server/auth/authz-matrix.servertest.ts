/**
 * The authorization matrix, on real Postgres, enumerated from the router itself: every procedure must have
 * a case below (a new procedure without one fails the first test), and for every procedure:
 *   - no credential            → UNAUTHORIZED (unless it is declared public)
 *   - each role in workspace A → FORBIDDEN when the role is below what the procedure declares
 *   - A's owner aimed at B     → B's rows neither leak into the answer nor change
 *   - an API token of B        → acts in B only, never in A
 *   npx vitest run --project server server/auth/authz-matrix.servertest.ts
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TRPCError } from "@trpc/server";
import { appRouter, createCaller } from "../routers/_app";
import { createContext } from "../trpc";
import { resetEnv } from "../env";
import { registerRunner } from "../runner-client";
import { ingestAndEmit } from "@/features/run-lifecycle/server";
import { createApiToken } from "@/features/workspace/server";
import { createInvite } from "@/features/workspace/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { setSecret } from "@/features/workspace/server";
import { setMcpServer } from "@/features/workspace/server";
import { McpServerDefinition } from "@contracts";
import { closedPort, createRunningRun, createTestDb, newWorkspace, runEvents, templateFiles, userWithRole, type TestDb } from "../test/harness";
import { ROLES, roleAtLeast, type Access, type Role } from "@contracts/roles";
import type { SessionUser } from "./principal";

let tdb: TestDb;
const db = () => tdb.handle.prisma;

/** One workspace's things a procedure can be aimed at. */
interface Side {
  workspaceId: string;
  users: Record<Role, SessionUser>;
  experimentId: string;
  /** The default experiment (no runs): what the delete case deletes, so the run's experiment stays. */
  defaultExperimentId: string;
  runId: string;
  runNumber: number;
  tokenId: string;
  token: string;
  inviteId: string;
  inviteToken: string;
  marker: string;
  /** A workspace secret's value: it may never come back from any procedure, in any workspace. */
  secretValue: string;
}
let A: Side;
let B: Side;
let runnerName: string;

async function makeSide(label: string): Promise<Side> {
  const workspaceId = await newWorkspace(db());
  const marker = `secret-${label}-${randomUUID().slice(0, 8)}`;
  const users = {} as Record<Role, SessionUser>;
  for (const r of ROLES) users[r] = await userWithRole(db(), workspaceId, r);
  const exp = await ensureDefaultExperiment(db(), workspaceId);
  await db().experiment.update({ where: { id: exp.id }, data: { description: marker } });
  const runId = await createRunningRun(db(), workspaceId);
  await ingestAndEmit(db(), runId, runEvents(runId));
  const run = await db().run.update({ where: { id: runId }, data: { notes: marker, tags: [marker] }, select: { number: true, experimentId: true } });
  const t = await createApiToken(db(), { userId: users.member.id, workspaceId, name: marker });
  const inv = await createInvite(db(), { workspaceId, createdById: users.owner.id, inviterRole: "owner", role: "viewer", days: 7 });
  const secretValue = `sv-${label}-${randomUUID()}`;
  await setSecret(db(), workspaceId, users.admin.id, { name: "MATRIX_SECRET", value: secretValue });
  await setMcpServer(db(), workspaceId, users.admin.id, { name: "matrix_server", definition: McpServerDefinition.parse({ command: "mcp-server-everything" }) });
  return { workspaceId, users, experimentId: run.experimentId, defaultExperimentId: exp.id, runId, runNumber: run.number, tokenId: t.id, token: t.token, inviteId: inv.id, inviteToken: inv.token, marker, secretValue };
}

/**
 * Each procedure's required access — the spec: a procedure whose builder declares less fails the first test —
 * and a valid input aimed at side `s`.
 */
const CASES: Record<string, [Access, (s: Side) => unknown]> = {
  "account.setupState": ["public", () => undefined],
  "account.me": ["user", () => undefined],
  "account.workspaces": ["user", () => undefined],
  "account.createWorkspace": ["user", () => ({ name: "matrix workspace" })],
  "account.describeInvite": ["public", (s) => ({ token: s.inviteToken })],
  "account.acceptInvite": ["user", (s) => ({ token: s.inviteToken })],
  "account.tokens": ["viewer", () => undefined],
  "account.createToken": ["viewer", () => ({ name: "matrix" })],
  "account.revokeToken": ["viewer", (s) => ({ id: s.tokenId })],
  "workspace.current": ["viewer", () => undefined],
  "workspace.members": ["viewer", () => undefined],
  "workspace.rename": ["owner", () => ({ name: "renamed by matrix" })],
  "workspace.setRole": ["admin", (s) => ({ userId: s.users.viewer.id, role: "member" })],
  "workspace.removeMember": ["admin", (s) => ({ userId: s.users.viewer.id })],
  "workspace.leave": ["viewer", () => undefined],
  "workspace.invites": ["admin", () => undefined],
  "workspace.createInvite": ["admin", () => ({ role: "viewer", days: 1 })],
  "workspace.revokeInvite": ["admin", (s) => ({ id: s.inviteId })],
  "experiments.list": ["viewer", () => undefined],
  "experiments.get": ["viewer", (s) => ({ id: s.experimentId })],
  "experiments.versions": ["viewer", (s) => ({ id: s.experimentId })],
  "experiments.default": ["viewer", () => undefined],
  "experiments.create": ["member", () => ({ name: `matrix-${randomUUID().slice(0, 6)}`, files: templateFiles() })],
  "experiments.createFromTemplate": ["member", () => ({ name: `matrix-${randomUUID().slice(0, 6)}`, template: null })],
  "experiments.latestRuntimeErrors": ["viewer", (s) => ({ id: s.experimentId })],
  "experiments.save": ["member", (s) => ({ id: s.experimentId, files: templateFiles({ seed: 7 }) })],
  "experiments.rename": ["member", (s) => ({ id: s.experimentId, name: `renamed-${randomUUID().slice(0, 6)}` })],
  "experiments.duplicate": ["member", (s) => ({ id: s.experimentId })],
  "experiments.setArchived": ["member", (s) => ({ id: s.experimentId, archived: true })],
  "experiments.restore": ["member", (s) => ({ id: s.experimentId, number: 1 })],
  "experiments.delete": ["admin", (s) => ({ id: s.defaultExperimentId })],
  "experiments.validate": ["member", () => ({ files: templateFiles(), kind: "dry-run" })],
  "runs.start": ["member", (s) => ({ experimentId: s.experimentId, files: templateFiles(), kind: "dry-run" })],
  "runs.list": ["viewer", () => undefined],
  "runs.facets": ["viewer", () => undefined],
  "runs.update": ["member", (s) => ({ id: s.runId, tags: ["matrix"], notes: "changed by matrix" })],
  "runs.get": ["viewer", (s) => ({ id: s.runId })],
  "runs.trajectories": ["viewer", (s) => ({ runId: s.runId })],
  "runs.series": ["viewer", (s) => ({ runId: s.runId, x: "step", width: 200 })],
  "runs.events": ["viewer", (s) => ({ runId: s.runId })],
  "runs.rolloutTokens": ["viewer", (s) => ({ runId: s.runId, rolloutId: "traj-1-0" })],
  "runs.stop": ["member", (s) => ({ id: s.runId })],
  "runs.resume": ["member", (s) => ({ id: s.runId })],
  "runs.fork": ["member", (s) => ({ runId: s.runId, step: 1 })],
  "runs.lineage": ["viewer", (s) => ({ id: s.runId })],
  "runs.rescore": ["member", (s) => ({ runId: s.runId, files: { "reward.ts": "export default function reward() { return 1; }\n" } })],
  "runners.status": ["viewer", () => undefined],
  "runners.list": ["viewer", () => undefined],
  // A closed port: an allowed caller gets "url: no runner answered" (BAD_GATEWAY), and nothing is saved.
  "runners.register": ["admin", (s) => ({ name: `matrix-${s.marker}`, url: "http://127.0.0.1:9", token: "matrix-token-123456" })],
  "runners.update": ["admin", () => ({ id: "no-such-runner", enabled: false })],
  "runners.remove": ["admin", () => ({ id: "no-such-runner" })],
  "templates.list": ["viewer", () => undefined],
  "checkpoints.list": ["viewer", (s) => ({ runId: s.runId })],
  "checkpoints.chat": ["viewer", (s) => ({ runId: s.runId, step: 1, messages: [{ role: "user", content: "hi" }], maxTokens: 4 })],
  // A step the run does not have: deleting it is a no-op answer (nothing of either side changes).
  "checkpoints.delete": ["member", (s) => ({ runId: s.runId, step: 999 })],
  // A side holds one run: the second id is one no workspace has (NOT_FOUND, never BAD_REQUEST); compare.servertest covers the rest.
  "flags.list": ["viewer", () => undefined],
  "flags.markRead": ["viewer", () => undefined],
  "flags.runFlags": ["viewer", (s) => ({ runId: s.runId })],
  "flags.webhook": ["admin", () => undefined],
  "flags.setWebhook": ["admin", () => ({ url: "http://127.0.0.1:9/matrix-hook" })],
  "flags.removeWebhook": ["admin", () => undefined],
  "flags.deliveries": ["admin", () => undefined],
  "compare.runs": ["viewer", (s) => ({ runIds: [s.runId, `${s.runId}-none`], baselineRunId: s.runId })],
  "secrets.list": ["viewer", () => undefined],
  "secrets.set": ["admin", () => ({ name: "MATRIX_NEW", value: "matrix-new-secret-value" })],
  "secrets.remove": ["admin", () => ({ name: "MATRIX_SECRET" })],
  "mcpServers.list": ["viewer", () => undefined],
  "mcpServers.set": ["admin", () => ({ name: "matrix_new", definition: { command: "mcp-server-everything" } })],
  "mcpServers.remove": ["admin", () => ({ name: "matrix_server" })],
};

type Procedure = { _def: { type: "query" | "mutation" | "subscription"; meta?: { access?: Access } } };
const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, Procedure>);

function caller(user: SessionUser | null, opts: { workspaceId?: string; rememberedWorkspaceId?: string; tokenWorkspaceId?: string } = {}) {
  return createCaller(
    createContext({
      db: db(),
      principal: user ? { user, tokenWorkspaceId: opts.tokenWorkspaceId ?? null, via: opts.tokenWorkspaceId ? "token" : "session" } : null,
      workspaceId: opts.workspaceId ?? null,
      rememberedWorkspaceId: opts.rememberedWorkspaceId ?? null,
      runnerName,
      source: "matrix",
    }),
  );
}

async function call(c: ReturnType<typeof caller>, path: string, input: unknown): Promise<{ ok: true; data: unknown } | { ok: false; code: string }> {
  const fn = path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], c) as (i: unknown) => Promise<unknown>;
  try {
    return { ok: true, data: await fn(input) };
  } catch (e) {
    if (e instanceof TRPCError) return { ok: false, code: e.code };
    throw e;
  }
}

/** B's rows that no one outside B may change, as one comparable snapshot. */
async function snapshot(s: Side): Promise<string> {
  const [ws, exps, versions, runs, tokens, invites, members, secrets, mcpServers] = await Promise.all([
    db().workspace.findUnique({ where: { id: s.workspaceId }, select: { name: true } }),
    db().experiment.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { id: "asc" }, select: { id: true, name: true, description: true, archivedAt: true } }),
    db().experimentVersion.count({ where: { experiment: { workspaceId: s.workspaceId } } }),
    db().run.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { id: "asc" }, select: { id: true, status: true, tags: true, notes: true } }),
    db().apiToken.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { id: "asc" }, select: { id: true, revokedAt: true } }),
    db().invite.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { id: "asc" }, select: { id: true, usedAt: true, revokedAt: true } }),
    db().membership.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { userId: "asc" }, select: { userId: true, role: true } }),
    db().workspaceSecret.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { name: "asc" }, select: { name: true, cipher: true } }),
    db().mcpServerDefinition.findMany({ where: { workspaceId: s.workspaceId }, orderBy: { name: "asc" }, select: { name: true, definition: true } }),
  ]);
  return JSON.stringify({ ws, exps, versions, runs, tokens, invites, members, secrets, mcpServers });
}

beforeAll(async () => {
  // The cases' runner and webhook URLs are on 127.0.0.1, which the egress policy refuses unless the operator allows it.
  process.env.EGRESS_ALLOW = "127.0.0.1";
  resetEnv();
  tdb = await createTestDb();
  // A runner that is never up: procedures that would reach it fail with RUNNER_UNAVAILABLE, quickly.
  runnerName = `closed-${randomUUID().slice(0, 6)}`;
  await registerRunner(db(), { name: runnerName, url: `http://127.0.0.1:${await closedPort()}`, token: "matrix-token-123456" });
  A = await makeSide("a");
  B = await makeSide("b");
}, 120_000);
afterAll(async () => {
  await tdb?.drop();
});

describe("authorization matrix", () => {
  it("every procedure declares its access and has a case here", () => {
    const undeclared = procedures.filter(([, p]) => !p._def.meta?.access).map(([path]) => path);
    expect(undeclared, "procedures built without a role builder (server/trpc.ts)").toEqual([]);
    const missing = procedures.map(([path]) => path).filter((path) => !(path in CASES));
    expect(missing, "procedures without a case in the authorization matrix").toEqual([]);
    const mismatched = procedures.filter(([path, p]) => path in CASES && CASES[path]![0] !== p._def.meta?.access).map(([path, p]) => `${path}: declares ${p._def.meta?.access}, must be ${CASES[path]![0]}`);
    expect(mismatched, "procedures whose declared access differs from the matrix").toEqual([]);
    const stale = Object.keys(CASES).filter((path) => !procedures.some(([p]) => p === path));
    expect(stale, "cases for procedures that no longer exist").toEqual([]);
  });

  it("no credential → UNAUTHORIZED for everything not declared public", async () => {
    const anon = caller(null);
    for (const [path, p] of procedures) {
      if (p._def.meta?.access === "public") continue;
      const res = await call(anon, path, CASES[path]![1](A));
      expect(res, path).toEqual({ ok: false, code: "UNAUTHORIZED" });
    }
  });

  it("a role below what a procedure declares → FORBIDDEN, in the caller's own workspace", async () => {
    for (const role of ROLES) {
      for (const [path, p] of procedures) {
        const access = p._def.meta!.access!;
        if (access === "public" || access === "user" || roleAtLeast(role, access)) continue;
        const res = await call(caller(A.users[role], { workspaceId: A.workspaceId }), path, CASES[path]![1](A));
        expect(res, `${role} → ${path}`).toEqual({ ok: false, code: "FORBIDDEN" });
      }
    }
  });

  it("A's owner aimed at B's things: nothing of B leaks or changes", async () => {
    const before = await snapshot(B);
    const secrets = [B.marker, B.runId, B.experimentId, B.tokenId, B.inviteId, B.workspaceId, B.secretValue, A.secretValue];
    for (const [path] of procedures) {
      // Accepting B's invite is what an invite is for: covered by the invite tests, not a leak.
      if (path === "account.acceptInvite" || path === "account.describeInvite") continue;
      const res = await call(caller(A.users.owner, { workspaceId: A.workspaceId }), path, CASES[path]![1](B));
      const text = res.ok ? JSON.stringify(res.data) ?? "" : "";
      for (const s of secrets) expect(text.includes(s), `${path} leaked ${s}`).toBe(false);
    }
    expect(await snapshot(B)).toBe(before);
  });

  it("asking for B's workspace without being a member is FORBIDDEN, and never falls through to B", async () => {
    // Asked for (the x-rollbook-workspace header): refused, never a silent switch to A's own workspace.
    expect(await call(caller(A.users.owner, { workspaceId: B.workspaceId }), "runs.get", { id: B.runId })).toEqual({ ok: false, code: "FORBIDDEN" });
    // Remembered (the browser's cookie) falls back to the user's own: B's run is then simply not found.
    const res = await call(caller(A.users.owner, { rememberedWorkspaceId: B.workspaceId }), "runs.get", { id: B.runId });
    expect(res).toEqual({ ok: false, code: "NOT_FOUND" });
    const list = await call(caller(A.users.owner, { rememberedWorkspaceId: B.workspaceId }), "runs.list", undefined);
    expect(JSON.stringify(list)).not.toContain(B.runId);
  });

  it("an API token acts only in its own workspace", async () => {
    const member = B.users.member;
    // Also a member of A, so only the token's scope keeps it out.
    await db().membership.create({ data: { workspaceId: A.workspaceId, userId: member.id, role: "owner" } });
    const viaToken = caller(member, { tokenWorkspaceId: B.workspaceId });
    expect(await call(viaToken, "runs.get", { id: A.runId })).toEqual({ ok: false, code: "NOT_FOUND" });
    const mine = await call(viaToken, "runs.get", { id: B.runId });
    expect(mine.ok).toBe(true);
    const elsewhere = await call(caller(member, { tokenWorkspaceId: B.workspaceId, workspaceId: A.workspaceId }), "runs.list", undefined);
    expect(elsewhere).toEqual({ ok: false, code: "FORBIDDEN" });
    await db().membership.delete({ where: { workspaceId_userId: { workspaceId: A.workspaceId, userId: member.id } } });
  });

  // Last: it changes A. Proves the cases' inputs are valid (else the checks above would be vacuous).
  it("the cases are valid: A's owner on A's own things is never refused for its input or its role", async () => {
    for (const [path] of procedures) {
      const res = await call(caller(A.users.owner, { workspaceId: A.workspaceId }), path, CASES[path]![1](A));
      if (res.ok) continue;
      expect(["BAD_REQUEST", "UNAUTHORIZED"], `${path} → ${res.code}`).not.toContain(res.code);
      // The owner may not leave their own workspace; everything else the owner may do.
      if (path !== "workspace.leave") expect(res.code, path).not.toBe("FORBIDDEN");
    }
  });
});
