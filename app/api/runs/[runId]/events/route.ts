/** A run's stored event log as one JSON array, for the run page's first load (features/run-view/server/run-events-http.ts). */
import { handleRunEvents } from "@/features/run-view/server/run-events-http";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunEvents(req, runId);
}
