/**
 * The run page's reads of whole rollouts, after a first load of summaries (features/run-view/rollout-summary.ts):
 *
 *   GET /api/runs/<run id>/rollouts?seqs=<seq>,<seq>…   → [Trajectory & {seq}, …] (a transcript opened, a diff, an export)
 *   GET /api/runs/<run id>/rollouts?q=<text>             → {seqs: [...], through} (the search box)
 *
 * Same access as the events route ("viewer"; another workspace's run is 404); bad parameters are a 400 naming the field.
 */
import { requireAccess } from "@/server/auth/request";
import { isAppError } from "@/server/errors";
import type { Db } from "@/server/db-types";
import { MAX_ROLLOUTS_PER_REQUEST } from "../rollout-summary";
import { rolloutsJson, searchRollouts } from "./rollouts-json";

const MAX_QUERY_CHARS = 500;

const fail = (status: number, message: string) => Response.json({ error: { message } }, { status });

export async function handleRollouts(req: Request, runId: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  const params = new URL(req.url).searchParams;
  const seqsParam = params.get("seqs");
  const q = params.get("q");
  if ((seqsParam === null) === (q === null)) return fail(400, "seqs or q: give exactly one");
  const headers = { "content-type": "application/json; charset=utf-8", "cache-control": "private, no-store" };
  try {
    if (q !== null) {
      if (q.trim() === "" || q.length > MAX_QUERY_CHARS) return fail(400, `q: 1 to ${MAX_QUERY_CHARS} characters`);
      return Response.json(await searchRollouts(access.db, access.workspaceId, runId, q.trim()), { headers });
    }
    const parts = seqsParam!.split(",");
    if (parts.length > MAX_ROLLOUTS_PER_REQUEST || !parts.every((s) => /^\d{1,9}$/.test(s))) {
      return fail(400, `seqs: 1 to ${MAX_ROLLOUTS_PER_REQUEST} whole numbers, comma-separated`);
    }
    return new Response(await rolloutsJson(access.db, access.workspaceId, runId, parts.map(Number)), { status: 200, headers });
  } catch (e) {
    if (isAppError(e) && e.code === "NOT_FOUND") return fail(404, e.message);
    throw e;
  }
}
