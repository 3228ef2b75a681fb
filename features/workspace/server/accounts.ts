/**
 * What happens around accounts: who may sign up, the workspace a new user gets, and setup state.
 *
 * The first user owns the default workspace — the one that holds the runs made before accounts existed, so
 * an upgrade loses nothing. Everyone after gets a workspace of their own (with the default experiment) and
 * joins others through invite links (features/workspace/server/invites.ts).
 */
import { randomBytes } from "node:crypto";
import type { Db } from "@/server/db-types";
import { ensureDefaultExperiment, ensureDefaultWorkspace } from "./default-workspace";
import { findUsableInvite } from "./invites";
import { ensureBundledMcpServers } from "./config/mcp-servers";

export async function userCount(db: Db): Promise<number> {
  return db.user.count();
}

/** Whether a sign-up may go ahead (the user row is about to be created). */
export async function signUpAllowed(db: Db, opts: { disabled: boolean; inviteToken: string | null }): Promise<{ ok: true } | { ok: false; reason: string }> {
  if (!opts.disabled) return { ok: true };
  if ((await userCount(db)) === 0) return { ok: true }; // the owner
  if (opts.inviteToken && (await findUsableInvite(db, opts.inviteToken))) return { ok: true };
  return { ok: false, reason: "Sign-up is closed on this server: ask an admin for an invite link." };
}

function slugFor(email: string): string {
  const local = email.split("@")[0]!.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 24) || "user";
  return `${local}-${randomBytes(3).toString("hex")}`;
}

/** A new workspace owned by the user, with the default experiment so it is usable at once. */
export async function createWorkspace(db: Db, userId: string, name: string, emailForSlug: string): Promise<{ id: string }> {
  const ws = await db.workspace.create({
    data: { slug: slugFor(emailForSlug), name, memberships: { create: { userId, role: "owner" } } },
    select: { id: true },
  });
  await ensureDefaultExperiment(db, ws.id);
  await ensureBundledMcpServers(db, ws.id);
  return ws;
}

/** Gives a new user a workspace they own: the default one if nobody owns it yet, else their own. */
export async function onUserCreated(db: Db, user: { id: string; name: string; email: string }): Promise<void> {
  const fallback = await ensureDefaultWorkspace(db);
  const claimed = await db.$transaction(async (tx) => {
    const owned = await tx.membership.findFirst({ where: { workspaceId: fallback.id, role: "owner" }, select: { userId: true } });
    if (owned) return false;
    await tx.membership.create({ data: { workspaceId: fallback.id, userId: user.id, role: "owner" } });
    return true;
  }).catch(() => false); // two first users at once: the loser gets their own workspace below
  if (claimed) return;
  await createWorkspace(db, user.id, `${user.name.trim() || user.email.split("@")[0]}'s workspace`, user.email);
}
