/** A run's trajectories as JSONL, streamed; ?tokens=1 adds token ids and logprobs (features/runs/server/export-http.ts). */
import { handleRunTrajectoriesJsonl } from "@/features/runs/server/export-http";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunTrajectoriesJsonl(req, runId);
}
