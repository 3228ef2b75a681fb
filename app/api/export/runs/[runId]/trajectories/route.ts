/** A run's trajectories as JSONL, streamed; ?tokens=1 adds token ids and logprobs (server/http/export.ts). */
import { handleRunTrajectoriesJsonl } from "@/server/http/export";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunTrajectoriesJsonl(req, runId);
}
