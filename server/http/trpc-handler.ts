/**
 * The tRPC HTTP handler (mounted at /api/trpc by app/api/trpc/[trpc]/route.ts): refuses a browser request
 * from an untrusted origin before anything runs (cookies are SameSite=Lax, which does not tell another port
 * of the same host apart), resolves the caller (session cookie or API token) and the workspace the browser
 * asks for; what the caller may do is decided per procedure in server/trpc.ts.
 */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "../routers/_app";
import { createContext } from "../trpc";
import { originAllowed } from "../auth/origins";
import { resolvePrincipal } from "../auth/principal";
import { requestedWorkspace } from "../auth/request";
import type { Db } from "../services/types";

export async function handleTrpcRequest(req: Request, db: Db, opts: { runnerName?: string } = {}): Promise<Response> {
  if (!originAllowed(req.headers.get("origin"))) {
    return Response.json({ error: { message: "requests from this origin are not allowed" } }, { status: 403 });
  }
  const principal = await resolvePrincipal(db, req.headers);
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: () => createContext({ db, principal, workspaceId: requestedWorkspace(req.headers), runnerName: opts.runnerName, source: "http" }),
    onError({ error, path }) {
      // Unexpected failures are logged here with their stack; the client only sees "Internal server error".
      if (error.code === "INTERNAL_SERVER_ERROR") console.error(`[trpc] ${path ?? "?"}:`, error.cause ?? error);
    },
  });
}
