/**
 * Better Auth's endpoints at /api/auth/*, behind our origin check: Better Auth skips its own when a request
 * carries no cookie (a sign-in form posted from another site would log the victim into the attacker's
 * account), so every browser request from an untrusted origin is refused here first.
 */
import { authFor } from "../auth/auth";
import { originAllowed } from "../auth/origins";
import type { Db } from "../services/types";

export async function handleAuthRequest(req: Request, db: Db): Promise<Response> {
  if (!originAllowed(req.headers.get("origin"))) {
    return Response.json({ message: "requests from this origin are not allowed" }, { status: 403 });
  }
  return authFor(db).handler(req);
}
