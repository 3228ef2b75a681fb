/** Stopping a run, whether or not its runner answers. */
import { isActiveStatus, type RunStatus } from "@contracts";
import { AppError, isAppError } from "@/server/errors";
import type { RunnerHandle } from "@/server/runner-client";
import { stopRun as stopRunStatus } from "@/features/run-lifecycle/server";
import type { Db } from "@/server/db-types";

/** The note on a run stopped while its runner did not answer (the ingest scan stops it there once it answers). */
export const STOPPED_UNREACHABLE = "stopped while the runner was unreachable";

/**
 * Stop a run. Its runner stops it and logs run.finished(stopped), which ingestion stores ("stopping"). A
 * runner that no longer knows the run cannot stop it: the run is over already, so it is recorded as stopped
 * here. A runner that does not answer cannot be waited for: the stop is recorded at once, with the note
 * STOPPED_UNREACHABLE, and the attempt stays open: the ingest scan tells the runner to stop that attempt when
 * it answers again, and stores what it logged meanwhile (ingestion keeps this first verdict).
 */
export async function stopRun(db: Db, workspaceId: string, id: string, getRunner: (runnerId: string) => Promise<RunnerHandle>) {
  const run = await db.run.findFirst({ where: { id, workspaceId }, select: { id: true, status: true, runnerId: true, attempt: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
  if (!isActiveStatus(run.status)) return { id, status: run.status as RunStatus };
  if (!run.runnerId) {
    await stopRunStatus(db, id, { runnerMayRun: false });
    return { id, status: "stopped" as const };
  }
  try {
    const runner = await getRunner(run.runnerId);
    const status = await runner.status();
    if (!status.runs.some((r) => r.run_id === id)) {
      await stopRunStatus(db, id, { runnerMayRun: false });
      return { id, status: "stopped" as const };
    }
    await runner.stop(id, run.attempt);
    return { id, status: "stopping" as const };
  } catch (e) {
    if (!isAppError(e) || e.code !== "RUNNER_UNAVAILABLE") throw e;
    await stopRunStatus(db, id, { note: STOPPED_UNREACHABLE, runnerMayRun: true });
    return { id, status: "stopped" as const };
  }
}
