/**
 * Which workspace a request acts in, and with which role. The one place membership is checked: tRPC's
 * role procedures (server/trpc.ts), socket.io room joins and the HTTP routes (exports, downloads, the
 * OpenAI-compatible endpoint) all call it.
 */
import { AppError } from "../errors";
import type { DbOrTx } from "../services/types";
import { roleAtLeast, type Role } from "./roles";

export interface WorkspaceAccess {
  workspaceId: string;
  role: Role;
}

/**
 * The caller's membership: in the token's workspace (an API token acts only there), else in the requested
 * workspace, else in their oldest membership. Throws FORBIDDEN when they are not a member.
 */
export async function resolveWorkspaceAccess(
  db: DbOrTx,
  userId: string,
  opts: { requestedWorkspaceId?: string | null; tokenWorkspaceId?: string | null } = {},
): Promise<WorkspaceAccess> {
  const wanted = opts.tokenWorkspaceId ?? opts.requestedWorkspaceId ?? null;
  if (opts.tokenWorkspaceId && opts.requestedWorkspaceId && opts.requestedWorkspaceId !== opts.tokenWorkspaceId) {
    throw new AppError("FORBIDDEN", "this API token belongs to another workspace");
  }
  if (wanted) {
    const m = await db.membership.findUnique({ where: { workspaceId_userId: { workspaceId: wanted, userId } }, select: { role: true } });
    if (m) return { workspaceId: wanted, role: m.role };
    // A browser whose remembered workspace the user has left falls back to their own; a token never does.
    if (opts.tokenWorkspaceId) throw new AppError("FORBIDDEN", "you are no longer a member of this token's workspace");
  }
  const first = await db.membership.findFirst({ where: { userId }, orderBy: { createdAt: "asc" }, select: { workspaceId: true, role: true } });
  if (!first) throw new AppError("FORBIDDEN", "you are not a member of any workspace");
  return first;
}

/** The caller's role in one given workspace (e.g. the run's, for a socket room), or null when not a member. */
export async function roleIn(db: DbOrTx, userId: string, workspaceId: string): Promise<Role | null> {
  const m = await db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } }, select: { role: true } });
  return m?.role ?? null;
}

/** Throws FORBIDDEN unless `role` reaches `needed`, naming both (the caller knows their own role). */
export function requireRole(role: Role, needed: Role): void {
  if (!roleAtLeast(role, needed)) throw new AppError("FORBIDDEN", `this needs the ${needed} role in this workspace; you are a ${role}`);
}
