/**
 * Authorization for plain HTTP routes (exports, checkpoint downloads, the OpenAI-compatible endpoint): the
 * same principal and membership checks as tRPC, answering 401/403 as JSON. Usage in a route handler:
 *
 *   const access = await requireAccess(req, "viewer");
 *   if (access instanceof Response) return access;
 *   // access.db, access.user, access.workspaceId, access.role
 *
 * These routes read (GET, HEAD): a request that carries a body is refused (413) before anything else, and
 * a NUL in the path or a query parameter is refused (400) naming it (contracts/text-rules.ts).
 */
import { getDb } from "../db";
import { isAppError } from "../errors";
import type { Db } from "../db-types";
import { originAllowed } from "./origins";
import { resolvePrincipal, type SessionUser } from "./principal";
import { type Role } from "@contracts/roles";
import { cookieValue, WORKSPACE_COOKIE, WORKSPACE_HEADER } from "@contracts/cookies";
import { requireRole, resolveWorkspaceAccess } from "./workspace-access";
import { REFUSAL_HEADERS, refuseBodyOnRead } from "../http/body-limit";
import { urlTextProblem } from "@contracts/text-rules";

export interface RequestAccess {
  db: Db;
  user: SessionUser;
  workspaceId: string;
  role: Role;
  /** The API token the request came with; null for a browser session. */
  tokenId: string | null;
}

function json(status: number, message: string): Response {
  const headers: Record<string, string> = status === 401 ? { "www-authenticate": 'Bearer realm="rollbook"' } : status === 413 ? { ...REFUSAL_HEADERS } : {};
  return Response.json({ error: { message } }, { status, headers });
}

/**
 * The workspace a request names: the header asks for one (a member or FORBIDDEN), the cookie remembers
 * the browser's last choice (a user who left it falls back to their own). See workspace-access.ts.
 */
export function requestedWorkspace(headers: Headers): { requestedWorkspaceId: string | null; rememberedWorkspaceId: string | null } {
  return { requestedWorkspaceId: headers.get(WORKSPACE_HEADER) || null, rememberedWorkspaceId: cookieValue(headers.get("cookie"), WORKSPACE_COOKIE) };
}

export async function requireAccess(req: Request, needed: Role, opts: { db?: Db } = {}): Promise<RequestAccess | Response> {
  const onRead = refuseBodyOnRead(req);
  if (onRead) return json(onRead.status, onRead.message);
  const inAddress = urlTextProblem(new URL(req.url));
  if (inAddress) return json(400, inAddress);
  if (!originAllowed(req.headers.get("origin"))) return json(403, "requests from this origin are not allowed");
  const db = opts.db ?? (await getDb());
  const principal = await resolvePrincipal(db, req.headers);
  if (!principal) return json(401, "sign in first, or send an API token as Authorization: Bearer …");
  try {
    const access = await resolveWorkspaceAccess(db, principal.user.id, { ...requestedWorkspace(req.headers), tokenWorkspaceId: principal.tokenWorkspaceId });
    requireRole(access.role, needed);
    return { db, user: principal.user, tokenId: principal.tokenId ?? null, ...access };
  } catch (e) {
    if (isAppError(e) && e.code === "FORBIDDEN") return json(403, e.message);
    throw e;
  }
}
