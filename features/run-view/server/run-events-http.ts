/**
 * A run's stored event log for the run page's first load, as plain JSON built by Postgres:
 *
 *   GET /api/runs/<run id>/events?after=<seq>&limit=<n>[&view=summary]   → [RunEvent, …] in seq order (seq > after)
 *
 * Same events, same shape and same access ("viewer"; another workspace's run is 404) as tRPC `runs.events`,
 * which stays for catching up. Why a route of its own: a 10,000-rollout run is ~18 MB of trajectories, and
 * through tRPC each page is parsed by Prisma, walked by superjson and stringified again (≈1 s a page of
 * 1,000 on the 2-core dev box, ten pages in a row); here Postgres writes the JSON text once and the browser
 * parses it natively. Headers `x-count` and `x-last-seq` let the client ask for the next page before parsing.
 * `view=summary` (the page's first load) sends each rollout.finished payload as the rollout's summary
 * (features/run-view/rollout-summary.ts); the page fetches a whole rollout when it opens it (rollouts-http.ts).
 */
import { requireAccess } from "@/server/auth/request";
import { isAppError } from "@/server/errors";
import { runEventsJson, type EventsView } from "./run-events-json";
import type { Db } from "@/server/db-types";

export const MAX_EVENTS_PAGE = 20_000;

const fail = (status: number, message: string) => Response.json({ error: { message } }, { status });

export async function handleRunEvents(req: Request, runId: string, opts: { db?: Db } = {}): Promise<Response> {
  const access = await requireAccess(req, "viewer", { db: opts.db });
  if (access instanceof Response) return access;
  const params = new URL(req.url).searchParams;
  const after = params.get("after") ?? "0";
  const limit = params.get("limit") ?? "5000";
  if (!/^\d{1,9}$/.test(after)) return fail(400, `after: a whole number ≥ 0, not ${JSON.stringify(after.slice(0, 40))}`);
  if (!/^\d{1,9}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_EVENTS_PAGE) {
    return fail(400, `limit: a whole number from 1 to ${MAX_EVENTS_PAGE}, not ${JSON.stringify(limit.slice(0, 40))}`);
  }
  const view = params.get("view") ?? "full";
  if (view !== "full" && view !== "summary") return fail(400, `view: "full" or "summary", not ${JSON.stringify(view.slice(0, 40))}`);
  try {
    const page = await runEventsJson(access.db, access.workspaceId, runId, Number(after), Number(limit), view satisfies EventsView);
    return new Response(page.body, {
      status: 200,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "cache-control": "private, no-store",
        "x-count": String(page.count),
        "x-last-seq": String(page.lastSeq),
      },
    });
  } catch (e) {
    if (isAppError(e) && e.code === "NOT_FOUND") return fail(404, e.message);
    throw e;
  }
}
