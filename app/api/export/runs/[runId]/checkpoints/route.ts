/** A run's checkpoints as JSON, naming the best one (features/checkpoints/server/checkpoints-export.ts). */
import { handleCheckpointsExport } from "@/features/checkpoints/server";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleCheckpointsExport(req, runId);
}
