/**
 * Accounts through Better Auth's real handler on real Postgres: the first user owns the default workspace,
 * later ones get their own; passwords are stored hashed; the session cookie is http-only and SameSite=Lax;
 * a wrong password says nothing useful to an attacker and repeated attempts are refused; changing the
 * password signs out the other sessions; invites are single use and expire.
 *   npx vitest run --project server server/auth/accounts.servertest.ts
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetEnv } from "../env";
import { createTestDb, type TestDb } from "../test/harness";
import { ensureDefaultWorkspace } from "@/features/workspace/server";
import { acceptInvite, createInvite } from "@/features/workspace/server";
import { handleAuthRequest } from "../http/auth-handler";
import { resolvePrincipal } from "./principal";

let tdb: TestDb;
const db = () => tdb.handle.prisma;
const ORIGIN = "http://127.0.0.1:3000";
const SIGNIN_LIMIT = 4;

beforeAll(async () => {
  process.env.AUTH_SIGNIN_PER_MINUTE = String(SIGNIN_LIMIT);
  resetEnv();
  tdb = await createTestDb();
});
afterAll(async () => {
  delete process.env.AUTH_SIGNIN_PER_MINUTE;
  resetEnv();
  await tdb?.drop();
});

async function authPost(path: string, body: unknown, headers: Record<string, string> = {}, ip = "10.0.0.1") {
  return handleAuthRequest(
    new Request(`${ORIGIN}/api/auth${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN, "x-forwarded-for": ip, ...headers },
      body: JSON.stringify(body),
    }),
    db(),
  );
}

function sessionCookie(res: Response): string {
  const set = res.headers.getSetCookie().find((c) => c.startsWith("rollbook.session_token="));
  if (!set) throw new Error(`no session cookie (status ${res.status})`);
  return set.split(";")[0]!;
}

async function whoIs(cookie: string) {
  return resolvePrincipal(db(), new Headers({ cookie }));
}

describe("accounts", () => {
  it("first user owns the default workspace; the next gets a workspace of their own", async () => {
    const def = await ensureDefaultWorkspace(db());
    const first = await authPost("/sign-up/email", { name: "Ada", email: "ada@example.com", password: "correct horse 1" });
    expect(first.status).toBe(200);
    const set = first.headers.getSetCookie().find((c) => c.startsWith("rollbook.session_token="))!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Lax/i);
    const ada = await whoIs(sessionCookie(first));
    expect(ada?.user.email).toBe("ada@example.com");
    expect(await db().membership.findMany({ where: { userId: ada!.user.id }, select: { workspaceId: true, role: true } })).toEqual([
      { workspaceId: def.id, role: "owner" },
    ]);

    const second = await authPost("/sign-up/email", { name: "Bob", email: "bob@example.com", password: "another pass 2" });
    const bob = await whoIs(sessionCookie(second));
    const bobs = await db().membership.findMany({ where: { userId: bob!.user.id }, select: { workspaceId: true, role: true } });
    expect(bobs).toHaveLength(1);
    expect(bobs[0]!.workspaceId).not.toBe(def.id);
    expect(bobs[0]!.role).toBe("owner");
    // Their workspace is usable at once: it has the default experiment.
    expect(await db().experiment.count({ where: { workspaceId: bobs[0]!.workspaceId } })).toBe(1);
  });

  it("stores only a password hash (scrypt), never the password", async () => {
    const acct = await db().account.findFirst({ where: { user: { email: "ada@example.com" }, providerId: "credential" } });
    expect(acct?.password).toBeTruthy();
    expect(acct!.password).not.toContain("correct horse 1");
    expect(acct!.password!.length).toBeGreaterThan(60);
  });

  it("a wrong password and an unknown email get the same answer; repeated attempts are refused", async () => {
    const wrong = await authPost("/sign-in/email", { email: "ada@example.com", password: "nope nope" }, {}, "10.9.9.9");
    const unknown = await authPost("/sign-in/email", { email: "nobody@example.com", password: "nope nope" }, {}, "10.9.9.9");
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const [a, b] = [(await wrong.json()) as { message: string }, (await unknown.json()) as { message: string }];
    expect(a.message).toBe(b.message);
    let last = 0;
    for (let i = 0; i < SIGNIN_LIMIT + 1; i++) last = (await authPost("/sign-in/email", { email: "ada@example.com", password: "nope nope" }, {}, "10.9.9.9")).status;
    expect(last).toBe(429);
    // Even the right password waits out the window from that address…
    expect((await authPost("/sign-in/email", { email: "ada@example.com", password: "correct horse 1" }, {}, "10.9.9.9")).status).toBe(429);
    // …while another address is not affected.
    expect((await authPost("/sign-in/email", { email: "ada@example.com", password: "correct horse 1" }, {}, "10.9.9.10")).status).toBe(200);
  });

  it("changing the password signs out the other sessions; the old password stops working", async () => {
    const s1 = sessionCookie(await authPost("/sign-in/email", { email: "bob@example.com", password: "another pass 2" }, {}, "10.0.0.2"));
    const s2 = sessionCookie(await authPost("/sign-in/email", { email: "bob@example.com", password: "another pass 2" }, {}, "10.0.0.3"));
    const changed = await authPost(
      "/change-password",
      { currentPassword: "another pass 2", newPassword: "brand new pass 3", revokeOtherSessions: true },
      { cookie: s1 },
      "10.0.0.2",
    );
    expect(changed.status).toBe(200);
    expect(await whoIs(s2)).toBeNull();
    expect((await authPost("/sign-in/email", { email: "bob@example.com", password: "another pass 2" }, {}, "10.0.0.4")).status).toBe(401);
    expect((await authPost("/sign-in/email", { email: "bob@example.com", password: "brand new pass 3" }, {}, "10.0.0.4")).status).toBe(200);
  });

  it("a request from another origin cannot sign in", async () => {
    const res = await authPost("/sign-in/email", { email: "ada@example.com", password: "correct horse 1" }, { origin: "http://evil.example" }, "10.0.0.5");
    expect(res.status).toBe(403);
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it("an invite is single use, expires, and joins with its role", async () => {
    const def = await ensureDefaultWorkspace(db());
    const ada = await db().user.findUniqueOrThrow({ where: { email: "ada@example.com" } });
    const bob = await db().user.findUniqueOrThrow({ where: { email: "bob@example.com" } });
    const inv = await createInvite(db(), { workspaceId: def.id, createdById: ada.id, inviterRole: "owner", role: "viewer", days: 7 });
    expect(await acceptInvite(db(), bob.id, inv.token)).toEqual({ workspaceId: def.id, role: "viewer" });
    await expect(acceptInvite(db(), bob.id, inv.token)).rejects.toThrow(/already been used/);
    const old = await createInvite(db(), { workspaceId: def.id, createdById: ada.id, inviterRole: "owner", role: "member", days: 1 });
    await db().invite.update({ where: { id: old.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await expect(acceptInvite(db(), bob.id, old.token)).rejects.toThrow(/expired/);
    await expect(acceptInvite(db(), bob.id, "made-up-token-123")).rejects.toThrow(/not valid/);
    // A member cannot invite an admin; nobody invites an owner.
    await expect(createInvite(db(), { workspaceId: def.id, createdById: bob.id, inviterRole: "member", role: "viewer", days: 1 })).rejects.toThrow(/cannot invite/);
    await expect(createInvite(db(), { workspaceId: def.id, createdById: ada.id, inviterRole: "owner", role: "owner", days: 1 })).rejects.toThrow(/cannot invite/);
  });
});
