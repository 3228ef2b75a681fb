/**
 * GET and DELETE /preview/models/{id}/checkpoints: the run's checkpoints as ART's cursor pages
 * (`{object: "list", data: [{id, step, metrics}], has_more, first_id, last_id}`; `after` is an item's id).
 * A log-only run has none: an empty page, and ART's get_step() answers 0. Deleting checkpoints is not done
 * in this slice: asked for steps the run does not have, it answers them as not found (which is all of a
 * log-only run's); asked for ones it has, it refuses.
 */
import type { z } from "zod";
import type { DbOrTx } from "@/server/db-types";
import type { CheckpointListQuery } from "../schema";

export async function listCheckpoints(db: DbOrTx, runId: string, q: z.infer<typeof CheckpointListQuery>) {
  const after = q.after === undefined ? null : afterStep(runId, q.after);
  const rows = await db.checkpoint.findMany({
    where: { runId, ...(after !== null ? { step: q.order === "asc" ? { gt: after } : { lt: after } } : {}) },
    orderBy: { step: q.order },
    take: q.limit + 1,
    select: { step: true },
  });
  const page = rows.slice(0, q.limit);
  const metrics = await db.step.findMany({ where: { runId, step: { in: page.map((c) => c.step) } }, select: { step: true, metrics: true } });
  const byStep = new Map(metrics.map((m) => [m.step, numbersOf(m.metrics)]));
  const data = page.map((c) => ({ id: checkpointId(runId, c.step), step: c.step, metrics: byStep.get(c.step) ?? {} }));
  return { object: "list", data, has_more: rows.length > q.limit, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

/** A checkpoint's id, as Rollbook names checkpoints as models: `<run>@<step>`. */
const checkpointId = (runId: string, step: number) => `${runId}@${step}`;

/** The step of a cursor (`<run>@<step>`); null for anything else (then the list starts at the beginning). */
function afterStep(runId: string, after: string): number | null {
  const m = /^(.+)@(\d+)$/.exec(after);
  return m && m[1] === runId ? Number(m[2]) : null;
}

/** A step's metrics as ART's Checkpoint.metrics (dict[str, float]): the numeric fields only. */
function numbersOf(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
  return out;
}

/**
 * ART's delete_checkpoints: Rollbook's one deletion mechanism (features/checkpoints/server/checkpoint-delete.ts),
 * the same the config's checkpoints.keep_last retention uses. Steps the run does not have come back as
 * not_found_steps; the run's newest checkpoint is refused.
 */
export { deleteCheckpoints } from "@/features/checkpoints/server";
