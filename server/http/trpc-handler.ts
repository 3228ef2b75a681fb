/**
 * The tRPC HTTP handler (mounted at /api/trpc by app/api/trpc/[trpc]/route.ts): refuses a browser request
 * from an untrusted origin before anything runs (cookies are SameSite=Lax, which does not tell another port
 * of the same host apart), resolves the caller (session cookie or API token) and the workspace the browser
 * asks for; what the caller may do is decided per procedure in server/trpc.ts. The body is read through the
 * door's cap (MAX_REQUEST_BYTES, server/http/body-limit.ts): past it tRPC answers 413 in its own shape.
 */
import { TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "../routers/_app";
import { createContext } from "../trpc";
import { originAllowed } from "../auth/origins";
import { resolvePrincipal } from "../auth/principal";
import { requestedWorkspace } from "../auth/request";
import { cappedBody, capOf, REFUSAL_HEADERS, withBody } from "./body-limit";
import type { Db } from "../db-types";

/** The header's workspace is asked for; the cookie's is remembered (server/auth/workspace-access.ts). */
function workspaceOf(headers: Headers) {
  const { requestedWorkspaceId, rememberedWorkspaceId } = requestedWorkspace(headers);
  return { workspaceId: requestedWorkspaceId, rememberedWorkspaceId };
}

export async function handleTrpcRequest(req: Request, db: Db, opts: { runnerName?: string } = {}): Promise<Response> {
  if (!originAllowed(req.headers.get("origin"))) {
    return Response.json({ error: { message: "requests from this origin are not allowed" } }, { status: 403 });
  }
  const principal = await resolvePrincipal(db, req.headers);
  // Queries carry their input in the address (bounded by Node's header limit); only a body needs a cap.
  const reads = req.method !== "GET" && req.method !== "HEAD";
  const body = reads ? cappedBody(req, capOf("trpc"), (e) => new TRPCError({ code: "PAYLOAD_TOO_LARGE", message: e.message })) : null;
  const res = await fetchRequestHandler({
    endpoint: "/api/trpc",
    req: body ? withBody(req, body) : req,
    router: appRouter,
    createContext: () => createContext({ db, principal, ...workspaceOf(req.headers), runnerName: opts.runnerName, source: "http" }),
    onError({ error, path }) {
      // Unexpected failures are logged here with their stack; the client only sees "Internal server error".
      if (error.code === "INTERNAL_SERVER_ERROR") console.error(`[trpc] ${path ?? "?"}:`, error.cause ?? error);
    },
  });
  // The rest of a refused body is never read: the connection is closed rather than kept for another request.
  if (res.status === 413) for (const [k, v] of Object.entries(REFUSAL_HEADERS)) res.headers.set(k, v);
  return res;
}
