/**
 * API tokens: per user, for one workspace, shown once, stored as sha256, revocable, last use recorded.
 *
 * Written here rather than with Better Auth's api-key plugin because a Rollbook token is scoped to a
 * workspace membership (it acts with the user's role there, and stops working when they leave), which that
 * plugin does not model. sha256 (not a slow hash) is right for 256-bit random tokens: there is nothing to
 * brute-force, and lookup by hash stays one indexed query.
 */
import { createHash, randomBytes } from "node:crypto";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";

export const API_TOKEN_PREFIX = "rbk_";
/** lastUsedAt is written at most this often per token (a busy script would otherwise write every call). */
const LAST_USED_RESOLUTION_MS = 60_000;

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export async function createApiToken(db: DbOrTx, opts: { userId: string; workspaceId: string; name: string }) {
  const token = API_TOKEN_PREFIX + randomBytes(32).toString("base64url");
  const row = await db.apiToken.create({
    data: { userId: opts.userId, workspaceId: opts.workspaceId, name: opts.name, prefix: token.slice(0, 10), tokenHash: hashToken(token) },
    select: { id: true, name: true, prefix: true, createdAt: true },
  });
  return { ...row, token };
}

/** The caller's own tokens in the workspace (never the secret: it was shown once). */
export function listApiTokens(db: DbOrTx, userId: string, workspaceId: string) {
  return db.apiToken.findMany({
    where: { userId, workspaceId },
    orderBy: { createdAt: "desc" },
    select: { id: true, name: true, prefix: true, createdAt: true, lastUsedAt: true, revokedAt: true },
  });
}

export async function revokeApiToken(db: DbOrTx, userId: string, workspaceId: string, id: string): Promise<void> {
  const res = await db.apiToken.updateMany({ where: { id, userId, workspaceId, revokedAt: null }, data: { revokedAt: new Date() } });
  if (res.count === 0) throw new AppError("NOT_FOUND", "no such active token");
}

/** The token's user and workspace, or null (unknown, revoked, or the user is no longer a member). */
export async function authenticateApiToken(db: DbOrTx, token: string) {
  const row = await db.apiToken.findUnique({
    where: { tokenHash: hashToken(token) },
    select: { id: true, workspaceId: true, revokedAt: true, lastUsedAt: true, user: { select: { id: true, email: true, name: true } } },
  });
  if (!row || row.revokedAt) return null;
  const member = await db.membership.findUnique({
    where: { workspaceId_userId: { workspaceId: row.workspaceId, userId: row.user.id } },
    select: { role: true },
  });
  if (!member) return null;
  const now = Date.now();
  if (!row.lastUsedAt || now - row.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    await db.apiToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date(now) } });
  }
  return { user: row.user, workspaceId: row.workspaceId, tokenId: row.id };
}
