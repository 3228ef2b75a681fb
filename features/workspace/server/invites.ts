/**
 * Invite links: an admin picks a role and an expiry; whoever opens the link signed in joins with that role,
 * once. The link holds a random token; only its sha256 is stored.
 */
import { randomBytes } from "node:crypto";
import { AppError } from "@/server/errors";
import { grantableRoles, roleAtLeast, type Role } from "@contracts/roles";
import { hashToken } from "./api-tokens";
import type { Db, DbOrTx } from "@/server/db-types";

export const INVITE_DAYS = [1, 7, 30] as const;

export async function createInvite(db: DbOrTx, opts: { workspaceId: string; createdById: string; inviterRole: Role; role: Role; days: number }) {
  if (!grantableRoles(opts.inviterRole).includes(opts.role)) {
    throw new AppError("FORBIDDEN", `a ${opts.inviterRole} cannot invite someone as ${opts.role}`);
  }
  const token = randomBytes(24).toString("base64url");
  const row = await db.invite.create({
    data: {
      workspaceId: opts.workspaceId,
      role: opts.role,
      createdById: opts.createdById,
      tokenHash: hashToken(token),
      expiresAt: new Date(Date.now() + opts.days * 86_400_000),
    },
    select: { id: true, role: true, expiresAt: true },
  });
  return { ...row, token, path: `/invite/${token}` };
}

export function listInvites(db: DbOrTx, workspaceId: string) {
  return db.invite.findMany({
    where: { workspaceId, usedAt: null, revokedAt: null, expiresAt: { gt: new Date() } },
    orderBy: { createdAt: "desc" },
    select: { id: true, role: true, expiresAt: true, createdAt: true, createdBy: { select: { name: true, email: true } } },
  });
}

export async function revokeInvite(db: DbOrTx, workspaceId: string, id: string): Promise<void> {
  const res = await db.invite.updateMany({ where: { id, workspaceId, usedAt: null, revokedAt: null }, data: { revokedAt: new Date() } });
  if (res.count === 0) throw new AppError("NOT_FOUND", "no such open invite");
}

type InviteState = { revokedAt: Date | null; usedAt: Date | null; expiresAt: Date };

/** Why an invite cannot be used (unknown and revoked read alike: nothing for a guesser), or null. */
function unusable(row: InviteState | null): AppError | null {
  if (!row || row.revokedAt) return new AppError("NOT_FOUND", "This invite link is not valid. Ask for a new one.");
  if (row.usedAt) return new AppError("CONFLICT", "This invite link has already been used. Ask for a new one.");
  if (row.expiresAt.getTime() <= Date.now()) return new AppError("CONFLICT", "This invite link has expired. Ask for a new one.");
  return null;
}

/** The invite behind a token if it can still be used, else null (no reason: callers outside a sign-in). */
export async function findUsableInvite(db: DbOrTx, token: string) {
  const row = await db.invite.findUnique({ where: { tokenHash: hashToken(token) } });
  return unusable(row) ? null : row;
}

/** What the invite page shows before joining. */
export async function describeInvite(db: DbOrTx, token: string) {
  const row = await db.invite.findUnique({
    where: { tokenHash: hashToken(token) },
    select: { role: true, expiresAt: true, usedAt: true, revokedAt: true, workspace: { select: { name: true } }, createdBy: { select: { name: true } } },
  });
  const problem = unusable(row);
  if (problem || !row) throw problem;
  return { workspaceName: row.workspace.name, role: row.role, invitedBy: row.createdBy.name, expiresAt: row.expiresAt };
}

/**
 * Joins the signed-in user to the invite's workspace. Single use: the invite is claimed in the same
 * transaction (a second use, even concurrent, is refused). A member who already has a higher role keeps it.
 */
export async function acceptInvite(db: Db, userId: string, token: string): Promise<{ workspaceId: string; role: Role }> {
  return db.$transaction(async (tx) => {
    const row = await tx.invite.findUnique({ where: { tokenHash: hashToken(token) } });
    const problem = unusable(row);
    if (problem || !row) throw problem;
    const claimed = await tx.invite.updateMany({ where: { id: row.id, usedAt: null }, data: { usedAt: new Date(), usedById: userId } });
    if (claimed.count === 0) throw unusable({ ...row, usedAt: new Date() })!;
    const existing = await tx.membership.findUnique({ where: { workspaceId_userId: { workspaceId: row.workspaceId, userId } } });
    if (existing) {
      if (!roleAtLeast(existing.role, row.role)) {
        await tx.membership.update({ where: { workspaceId_userId: { workspaceId: row.workspaceId, userId } }, data: { role: row.role } });
        return { workspaceId: row.workspaceId, role: row.role };
      }
      return { workspaceId: row.workspaceId, role: existing.role };
    }
    await tx.membership.create({ data: { workspaceId: row.workspaceId, userId, role: row.role } });
    return { workspaceId: row.workspaceId, role: row.role };
  });
}
