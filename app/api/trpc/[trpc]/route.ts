/** The web API over HTTP: tRPC's fetch adapter on the App Router, at /api/trpc. */
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "@/server/routers/_app";
import { createContext } from "@/server/trpc";
import { getDb } from "@/server/db";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: async () => createContext({ db: await getDb(), source: "http" }),
    onError({ error, path }) {
      // Unexpected failures are logged here with their stack; the client only sees "Internal server error".
      if (error.code === "INTERNAL_SERVER_ERROR") console.error(`[trpc] ${path ?? "?"}:`, error.cause ?? error);
    },
  });

export { handler as GET, handler as POST };
