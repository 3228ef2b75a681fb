/** Whole rollouts by seq, and the rollout search, for the run page (features/run-view/server/rollouts-http.ts). */
import { handleRollouts } from "@/features/run-view/server/rollouts-http";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string }> }): Promise<Response> {
  const { runId } = await ctx.params;
  return handleRollouts(req, runId);
}
