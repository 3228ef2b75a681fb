/** A checkpoint's LoRA adapter as a PEFT folder .tar.gz (features/checkpoints/server/checkpoint-download.ts). */
import { handleCheckpointDownload } from "@/features/checkpoints/server/checkpoint-download";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

export async function GET(req: Request, ctx: { params: Promise<{ runId: string; step: string }> }): Promise<Response> {
  const { runId, step } = await ctx.params;
  return handleCheckpointDownload(req, runId, step);
}
