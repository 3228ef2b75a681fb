/**
 * Who is calling: an API token (`Authorization: Bearer rbk_…`, for scripts, CI and the OpenAI-compatible
 * endpoint) or a session cookie (the browser). Null when neither is valid. The same function serves tRPC,
 * socket.io handshakes and the HTTP routes.
 */
import type { Db } from "../db-types";
import { authenticateApiToken, API_TOKEN_PREFIX } from "@/features/workspace/server";
import { authFor } from "./auth";

export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

export interface Principal {
  user: SessionUser;
  /** Set for API tokens: the one workspace the token may act in. */
  tokenWorkspaceId: string | null;
  via: "session" | "token";
  /** Set for API tokens: which one (the ART API shows "ART client, token <its name>" on the run). */
  tokenId?: string;
}

export function bearerToken(headers: Headers): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "");
  return m ? m[1]! : null;
}

export async function resolvePrincipal(db: Db, headers: Headers): Promise<Principal | null> {
  const bearer = bearerToken(headers);
  if (bearer) {
    // A bearer that is not ours is not silently ignored in favour of a cookie: the caller meant it.
    if (!bearer.startsWith(API_TOKEN_PREFIX)) return null;
    const hit = await authenticateApiToken(db, bearer);
    return hit ? { user: hit.user, tokenWorkspaceId: hit.workspaceId, via: "token", tokenId: hit.tokenId } : null;
  }
  if (!headers.get("cookie")) return null;
  const session = await authFor(db).api.getSession({ headers });
  if (!session) return null;
  const { id, email, name } = session.user;
  return { user: { id, email, name }, tokenWorkspaceId: null, via: "session" };
}

/** Node's IncomingHttpHeaders → fetch Headers (socket.io handshakes). */
export function toHeaders(raw: Record<string, string | string[] | undefined>): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) h.append(k, one);
  }
  return h;
}
