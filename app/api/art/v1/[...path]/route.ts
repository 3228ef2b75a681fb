/** OpenPipe ART's client (`ServerlessBackend(base_url=".../api/art/v1")`): features/art/server/art-api.ts. */
import { handleArtRequest } from "@/features/art/server";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

type Ctx = { params: Promise<{ path: string[] }> };

const handle = async (req: Request, ctx: Ctx): Promise<Response> => handleArtRequest(req, (await ctx.params).path);

export const GET = handle;
export const POST = handle;
export const DELETE = handle;
