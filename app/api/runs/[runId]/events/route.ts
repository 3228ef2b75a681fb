/** A run's stored event log as one JSON array, for the run page's first load (server/http/run-events.ts). */
import { handleRunEvents } from "@/server/http/run-events";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunEvents(req, runId);
}
