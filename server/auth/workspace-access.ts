/**
 * Which workspace a request acts in, and with which role. The one place membership is checked: tRPC's
 * role procedures (server/trpc.ts), socket.io room joins and the HTTP routes (exports, downloads, the
 * OpenAI-compatible endpoint) all call it.
 */
import { AppError } from "../errors";
import type { DbOrTx } from "../db-types";
import { roleAtLeast, type Role } from "@contracts/roles";

export interface WorkspaceAccess {
  workspaceId: string;
  role: Role;
}

/** Where the workspace a request acts in was named. */
export interface WorkspaceChoice {
  /**
   * Asked for explicitly: the x-rollbook-workspace header (scripts using a session), or a server-side
   * caller's choice. The caller must be a member: otherwise FORBIDDEN, naming it — never a silent switch
   * to another workspace, where the call would then create, rename or mint tokens unasked.
   */
  requestedWorkspaceId?: string | null;
  /**
   * Remembered by the browser (the workspace cookie, set by the switcher). A user who has since left that
   * workspace (or was removed) lands in their own instead: the cookie is the browser's memory of a choice,
   * not a request, and failing every page until the cookie is cleared would help no one. Nothing of the
   * remembered workspace is reachable either way — membership is checked on whichever workspace is used.
   */
  rememberedWorkspaceId?: string | null;
  /** Set for API tokens: the token acts only there; any other workspace named is FORBIDDEN. */
  tokenWorkspaceId?: string | null;
}

/** The header scripts name a workspace with (cookies.ts WORKSPACE_HEADER; no import: that file is browser-bundled). */
const HEADER = "x-rollbook-workspace";

/**
 * The caller's membership: in the token's workspace (an API token acts only there), else in the requested
 * workspace (FORBIDDEN when not a member), else in the remembered one when still a member, else in their
 * oldest membership. Socket rooms do not come through here with a choice: a run's room is joined by
 * membership of that run's own workspace (realtime/socket-server.ts), whatever the handshake's headers say.
 */
export async function resolveWorkspaceAccess(db: DbOrTx, userId: string, opts: WorkspaceChoice = {}): Promise<WorkspaceAccess> {
  const named = opts.requestedWorkspaceId ?? opts.rememberedWorkspaceId ?? null;
  if (opts.tokenWorkspaceId) {
    if (named && named !== opts.tokenWorkspaceId) throw new AppError("FORBIDDEN", "this API token belongs to another workspace");
    const m = await membership(db, opts.tokenWorkspaceId, userId);
    if (!m) throw new AppError("FORBIDDEN", "you are no longer a member of this token's workspace");
    return { workspaceId: opts.tokenWorkspaceId, role: m.role };
  }
  if (opts.requestedWorkspaceId) {
    const m = await membership(db, opts.requestedWorkspaceId, userId);
    // The same answer for a workspace that does not exist: membership is all a caller may learn.
    if (!m) throw new AppError("FORBIDDEN", `${HEADER}: you are not a member of workspace ${opts.requestedWorkspaceId}`);
    return { workspaceId: opts.requestedWorkspaceId, role: m.role };
  }
  if (opts.rememberedWorkspaceId) {
    const m = await membership(db, opts.rememberedWorkspaceId, userId);
    if (m) return { workspaceId: opts.rememberedWorkspaceId, role: m.role };
  }
  const first = await db.membership.findFirst({ where: { userId }, orderBy: { createdAt: "asc" }, select: { workspaceId: true, role: true } });
  if (!first) throw new AppError("FORBIDDEN", "you are not a member of any workspace");
  return first;
}

function membership(db: DbOrTx, workspaceId: string, userId: string) {
  return db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } }, select: { role: true } });
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
