/**
 * Resume a stopped or failed train run from its newest checkpoint (ART's "the step is the newest
 * checkpoint"). The runner continues the same run id and event log: numbering goes on after the stored
 * seq, no step is repeated or skipped, and ingestion picks the stream up again once the run is running.
 */
import { AppError } from "../errors";
import { type RunnerHandle } from "../runner-client";
import { parseStoredFiles } from "./experiments";
import { emitRunStatus, notifyRunStarted } from "./run-hooks";
import type { Db } from "./types";
import { InitFrom, type Diagnostic } from "@contracts";

export type ResumeRunResult = { ok: true; runId: string } | { ok: false; error: string; diagnostics: Diagnostic[] };

export async function resumeRun(
  db: Db,
  workspaceId: string,
  id: string,
  runnerById: (runnerId: string) => Promise<RunnerHandle>,
): Promise<ResumeRunResult> {
  const run = await db.run.findFirst({
    where: { id, workspaceId },
    select: { id: true, kind: true, status: true, runnerId: true, lastSeq: true, parentRunId: true, parentStep: true, version: { select: { files: true } } },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
  if (run.kind !== "train") throw new AppError("BAD_INPUT", "only train runs can be resumed (they have checkpoints)");
  if (run.status !== "stopped" && run.status !== "failed") {
    throw new AppError("CONFLICT", `run is ${run.status}: only a stopped or failed run can be resumed`);
  }
  if (!run.runnerId) throw new AppError("BAD_INPUT", "the run never reached a runner, so there is nothing to resume");

  const runner = await runnerById(run.runnerId);
  const files = parseStoredFiles(run.version.files);
  const initFrom = await forkStart(db, run);
  const res = await runner.start({ run_id: run.id, kind: "train", files, resume: true, ...(initFrom ? { init_from: initFrom } : {}) });
  if (!res.ok) return { ok: false, error: res.error, diagnostics: res.diagnostics };

  const now = new Date();
  await db.run.updateMany({
    where: { id: run.id, status: { in: ["stopped", "failed"] } },
    data: { status: "running", error: null, finishedAt: null, lastHeartbeatAt: now },
  });
  emitRunStatus({ runId: run.id, status: "running", error: null, lastSeq: run.lastSeq });
  notifyRunStarted(run.id);
  return { ok: true, runId: run.id };
}

/**
 * A fork stopped before its first checkpoint must start from its parent's checkpoint again, exactly as it
 * first did (run.started records init_from, load_optimizer included); once it has checkpoints the runner and
 * engine continue from its own and ignore this.
 */
async function forkStart(db: Db, run: { id: string; parentRunId: string | null; parentStep: number | null }): Promise<InitFrom | null> {
  if (!run.parentRunId || run.parentStep === null) return null;
  const started = await db.runEvent.findFirst({ where: { runId: run.id, type: "run.started" }, orderBy: { seq: "asc" }, select: { payload: true } });
  const recorded = InitFrom.safeParse((started?.payload as { init_from?: unknown } | null)?.init_from);
  return recorded.success ? recorded.data : { run_id: run.parentRunId, step: run.parentStep, load_optimizer: false };
}
