/**
 * The web API over HTTP: tRPC's fetch adapter on the App Router, at /api/trpc. The caller (session cookie or
 * API token) is resolved here; what they may do is decided per procedure in server/trpc.ts. A browser
 * request from an untrusted origin is refused before anything runs (cookies are SameSite=Lax, which does not
 * tell another port of the same host apart).
 */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "@/server/routers/_app";
import { createContext } from "@/server/trpc";
import { getDb } from "@/server/db";
import { originAllowed } from "@/server/auth/origins";
import { resolvePrincipal } from "@/server/auth/principal";
import { requestedWorkspace } from "@/server/auth/request";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const handler = async (req: Request) => {
  if (!originAllowed(req.headers.get("origin"))) {
    return Response.json({ error: { message: "requests from this origin are not allowed" } }, { status: 403 });
  }
  const db = await getDb();
  const principal = await resolvePrincipal(db, req.headers);
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: () => createContext({ db, principal, workspaceId: requestedWorkspace(req.headers), source: "http" }),
    onError({ error, path }) {
      // Unexpected failures are logged here with their stack; the client only sees "Internal server error".
      if (error.code === "INTERNAL_SERVER_ERROR") console.error(`[trpc] ${path ?? "?"}:`, error.cause ?? error);
    },
  });
};

export { handler as GET, handler as POST };
