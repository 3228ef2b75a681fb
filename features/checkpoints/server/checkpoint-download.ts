/**
 * GET /api/checkpoints/<runId>/<step>/download (app/api/checkpoints/…): a checkpoint's LoRA adapter as a
 * .tar.gz of one PEFT folder, streamed from the runner that holds it:
 *
 *   tar xzf run-12-step-3-adapter.tar.gz          # → <run id>-step3/adapter_config.json, adapter_model.safetensors
 *   PeftModel.from_pretrained(base_model, "<run id>-step3")
 *
 * Authorized as any web call (requireAccess "viewer": session or API token); a run of another workspace
 * is 404, exactly like a step that has no checkpoint.
 */
import { requireAccess } from "@/server/auth/request";
import { isAppError } from "@/server/errors";
import { checkpointArchive } from "./checkpoints";
import type { Db } from "@/server/db-types";

const STATUS = { NOT_FOUND: 404, BAD_INPUT: 400, RUNNER_UNAVAILABLE: 503, RUNNER_ERROR: 502, FORBIDDEN: 403, UNAUTHORIZED: 401, CONFLICT: 409 } as const;

export async function handleCheckpointDownload(req: Request, runId: string, stepText: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  if (!/^\d{1,9}$/.test(stepText)) return Response.json({ error: { message: `step: a whole number, not ${JSON.stringify(stepText.slice(0, 40))}` } }, { status: 400 });
  try {
    const { body, filename } = await checkpointArchive(access.db, access.workspaceId, runId, Number(stepText), req.signal);
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": "application/gzip",
        "content-disposition": `attachment; filename="${filename}"`,
        "cache-control": "private, no-store",
      },
    });
  } catch (e) {
    if (!isAppError(e)) throw e;
    return Response.json({ error: { message: e.message } }, { status: STATUS[e.code] });
  }
}
