/**
 * Who reads a checkpoint now: the active runs (queued, running, lost) of its workspace that need its files —
 * an eval of it (evalModel `<run>@<step>`), a fork that has not trained its first step yet (initFrom: the
 * engine reads the parent's adapter at step 1), a run whose judge or sampling model names it (by run id or by
 * run number). A deletion asked for while one does is deferred (Checkpoint.deleteRequestedAt) and carried out
 * when the last of them ends (releaseDeferredDeletes, called on every run's terminal status), so an eval is
 * never cut off mid-way by ART's delete_checkpoints or by keep_last.
 */
import { ACTIVE_RUN_STATUSES, checkpointModelName } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import type { DbOrTx } from "@/server/db-types";

export interface Holder {
  number: number;
  why: string;
}

export async function checkpointHolders(db: DbOrTx, run: { id: string; number: number; workspaceId: string }, step: number): Promise<Holder[]> {
  const names = [checkpointModelName(run.id, step), `${run.number}@${step}`];
  const named = (path: string[]): Prisma.RunWhereInput[] => names.map((n) => ({ config: { path, equals: n } }));
  const rows = await db.run.findMany({
    where: {
      workspaceId: run.workspaceId,
      id: { not: run.id },
      status: { in: [...ACTIVE_RUN_STATUSES] },
      OR: [
        { evalModel: names[0] },
        { AND: [{ initFrom: { path: ["run_id"], equals: run.id } }, { initFrom: { path: ["step"], equals: step } }], currentStep: 0 },
        ...named(["judge", "model"]),
        ...named(["model"]),
      ],
    },
    select: { number: true, evalModel: true, initFrom: true },
    orderBy: { number: "asc" },
  });
  return rows.map((r) => ({
    number: r.number,
    why: r.evalModel === names[0] ? "evaluates it" : r.initFrom ? "starts from it" : "samples or judges with it",
  }));
}
