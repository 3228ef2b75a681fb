/** The web API over HTTP at /api/trpc (server/http/trpc-handler.ts). */
import { getDb } from "@/server/db";
import { handleTrpcRequest } from "@/server/http/trpc-handler";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const handler = async (req: Request) => handleTrpcRequest(req, await getDb());

export { handler as GET, handler as POST };
