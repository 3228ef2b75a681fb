/** Better Auth's endpoints (sign-up, sign-in, sign-out, change-password, OAuth callbacks) at /api/auth/*. */
import { getDb } from "@/server/db";
import { authFor } from "@/server/auth/auth";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

const handler = async (req: Request) => authFor(await getDb()).handler(req);

export { handler as GET, handler as POST };
