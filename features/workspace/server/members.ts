/** A workspace's people: list them, change a role, remove someone, leave. The owner stays the owner. */
import { AppError } from "@/server/errors";
import { grantableRoles, type Role } from "@contracts/roles";
import { evictFromWorkspace } from "@/server/realtime/evict";
import type { Db, DbOrTx } from "@/server/db-types";

export function listMembers(db: DbOrTx, workspaceId: string) {
  return db.membership.findMany({
    where: { workspaceId },
    orderBy: { createdAt: "asc" },
    select: { role: true, createdAt: true, user: { select: { id: true, name: true, email: true } } },
  });
}

export async function setMemberRole(db: Db, opts: { workspaceId: string; actorRole: Role; userId: string; role: Role }): Promise<void> {
  const target = await db.membership.findUnique({ where: { workspaceId_userId: { workspaceId: opts.workspaceId, userId: opts.userId } } });
  if (!target) throw new AppError("NOT_FOUND", "no such member");
  if (target.role === "owner") throw new AppError("FORBIDDEN", "the owner's role cannot be changed");
  const grantable = grantableRoles(opts.actorRole);
  if (!grantable.includes(opts.role) || !grantable.includes(target.role)) {
    throw new AppError("FORBIDDEN", `a ${opts.actorRole} cannot change a ${target.role} to ${opts.role}`);
  }
  await db.membership.update({ where: { workspaceId_userId: { workspaceId: opts.workspaceId, userId: opts.userId } }, data: { role: opts.role } });
}

/** Removes a member (admins: anyone below them; anyone: themselves, except the owner). */
export async function removeMember(db: Db, opts: { workspaceId: string; actorId: string; actorRole: Role; userId: string }): Promise<void> {
  const target = await db.membership.findUnique({ where: { workspaceId_userId: { workspaceId: opts.workspaceId, userId: opts.userId } } });
  if (!target) throw new AppError("NOT_FOUND", "no such member");
  if (target.role === "owner") throw new AppError("FORBIDDEN", "the owner cannot be removed or leave their workspace");
  if (opts.userId !== opts.actorId && !grantableRoles(opts.actorRole).includes(target.role)) {
    throw new AppError("FORBIDDEN", `a ${opts.actorRole} cannot remove a ${target.role}`);
  }
  await db.$transaction([
    db.membership.delete({ where: { workspaceId_userId: { workspaceId: opts.workspaceId, userId: opts.userId } } }),
    // Their tokens for this workspace stop working with the membership; revoke them too, visibly.
    db.apiToken.updateMany({ where: { workspaceId: opts.workspaceId, userId: opts.userId, revokedAt: null }, data: { revokedAt: new Date() } }),
  ]);
  // A page they still have open stops receiving the workspace's runs now, not at its next reload.
  await evictFromWorkspace(opts.userId, opts.workspaceId);
}

/** The workspaces the user belongs to, with their role, for the switcher. */
export async function myWorkspaces(db: DbOrTx, userId: string) {
  const rows = await db.membership.findMany({
    where: { userId },
    orderBy: { createdAt: "asc" },
    select: { role: true, workspace: { select: { id: true, name: true, slug: true } } },
  });
  return rows.map((r) => ({ ...r.workspace, role: r.role }));
}

export async function renameWorkspace(db: DbOrTx, workspaceId: string, name: string): Promise<void> {
  await db.workspace.update({ where: { id: workspaceId }, data: { name } });
}
