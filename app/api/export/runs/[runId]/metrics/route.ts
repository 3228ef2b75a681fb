/** A run's step metrics as CSV (features/runs/server/export-http.ts). */
import { handleRunMetricsCsv } from "@/features/runs/server/export-http";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRunMetricsCsv(req, runId);
}
