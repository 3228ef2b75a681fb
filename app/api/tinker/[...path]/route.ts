/** The Tinker SDK (`tinker.ServiceClient(base_url=".../api/tinker")`): features/tinker/server/tinker-api.ts. */
import { handleTinkerRequest } from "@/features/tinker/server";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Ctx = { params: Promise<{ path: string[] }> };

const handle = async (req: Request, ctx: Ctx): Promise<Response> => handleTinkerRequest(req, (await ctx.params).path);

export const GET = handle;
export const POST = handle;
export const HEAD = handle;
