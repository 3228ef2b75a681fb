/** Better Auth's endpoints (sign-up, sign-in, sign-out, change-password, OAuth callbacks) at /api/auth/*. */
import { getDb } from "@/server/db";
import { handleAuthRequest } from "@/server/http/auth-handler";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const handler = async (req: Request) => handleAuthRequest(req, await getDb());

export { handler as GET, handler as POST };
