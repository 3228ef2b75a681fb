/** A run's step metrics as CSV (server/http/export.ts). */
import { handleRunMetricsCsv } from "@/server/http/export";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunMetricsCsv(req, runId);
}
