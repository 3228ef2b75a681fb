/**
 * Export downloads (mounted by app/api/export/…), for the browser (session cookie) and for scripts
 * (`Authorization: Bearer rbk_…`), both through requireAccess "viewer":
 *
 *   GET /api/export/runs?status=failed&tag=baseline…     the runs table as CSV, the page's filters and order
 *   GET /api/export/runs/<run id>/metrics                one row per step, a column per metric (CSV)
 *   GET /api/export/runs/<run id>/trajectories[?tokens=1][&split=train|val][&step=N]
 *                                                       one rollout per line (JSONL, streamed); tokens=1 adds
 *                                                       the token ids and sampling logprobs
 *
 *   curl -H "Authorization: Bearer $ROLLBOOK_TOKEN" "$URL/api/export/runs/<id>/trajectories?tokens=1" > t.jsonl
 *
 * A run of another workspace is 404, exactly like one that does not exist.
 */
import { requireAccess } from "@/server/auth/request";
import { isAppError } from "@/server/errors";
import { runMetricsCsv, runsTableCsv, runTrajectoriesJsonl } from "./run-export";
import { viewFromSearchParams, viewToListInput } from "../runs-table-query";
import type { Db } from "@/server/db-types";

const STATUS = { NOT_FOUND: 404, BAD_INPUT: 400, RUNNER_UNAVAILABLE: 503, RUNNER_ERROR: 502, FORBIDDEN: 403, UNAUTHORIZED: 401, CONFLICT: 409 } as const;

const fail = (status: number, message: string) => Response.json({ error: { message } }, { status });

function appError(e: unknown): Response {
  if (!isAppError(e)) throw e;
  return fail(STATUS[e.code], e.message);
}

function download(body: BodyInit, filename: string, type: string): Response {
  return new Response(body, {
    status: 200,
    headers: { "content-type": type, "content-disposition": `attachment; filename="${filename}"`, "cache-control": "private, no-store" },
  });
}

export async function handleRunMetricsCsv(req: Request, runId: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  try {
    const { filename, body } = await runMetricsCsv(access.db, access.workspaceId, runId);
    return download(body, filename, "text/csv; charset=utf-8");
  } catch (e) {
    return appError(e);
  }
}

export async function handleRunTrajectoriesJsonl(req: Request, runId: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  const params = new URL(req.url).searchParams;
  const split = params.get("split");
  if (split !== null && split !== "train" && split !== "val") return fail(400, `split: "train" or "val", not ${JSON.stringify(split.slice(0, 40))}`);
  const stepText = params.get("step");
  if (stepText !== null && !/^\d{1,9}$/.test(stepText)) return fail(400, `step: a whole number, not ${JSON.stringify(stepText.slice(0, 40))}`);
  try {
    const { filename, body } = await runTrajectoriesJsonl(access.db, access.workspaceId, runId, {
      tokens: params.get("tokens") === "1",
      split: split ?? undefined,
      step: stepText === null ? undefined : Number(stepText),
    });
    return download(body, filename, "application/x-ndjson; charset=utf-8");
  } catch (e) {
    return appError(e);
  }
}

export async function handleRunsTableCsv(req: Request, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  const view = viewFromSearchParams(new URL(req.url).searchParams);
  try {
    const body = await runsTableCsv(access.db, access.workspaceId, viewToListInput(view));
    const day = new Date().toISOString().slice(0, 10);
    return download(body, `runs-${day}.csv`, "text/csv; charset=utf-8");
  } catch (e) {
    return appError(e);
  }
}
