/**
 * Resume a stopped, failed or lost train run from its newest checkpoint (ART's "the step is the newest
 * checkpoint"). On the run's own runner it continues the same run id and event log: numbering goes on after
 * the stored seq, no step is repeated or skipped, and ingestion picks the stream up again once the run is
 * running. On ANOTHER runner (its own was lost, or the caller picks one) run-move.ts first hands that runner
 * the newest recorded checkpoint and the stored event log; the run then belongs to the new runner
 * (runnerId), ingestion reads only from it, and the old runner is remembered (movedFromRunnerId) so the
 * ingest scan tells it to stop the run if it comes back still running it.
 */
import { AppError, isAppError } from "@/server/errors";
import { type RunnerHandle } from "@/server/runner-client";
import { parseStoredFiles } from "@/features/experiments/server";
import { notifyRunMoved, notifyRunStarted } from "@/server/run-hooks";
import * as lifecycle from "./lifecycle";
import { handBackEventLog, moveRunTo } from "./run-move";
import { workspaceRunSpec } from "@/features/workspace/server";
import type { Db } from "@/server/db-types";
import { InitFrom, type Diagnostic, type RunStatus } from "@contracts";

export type ResumeRunResult =
  | { ok: true; runId: string; runnerId: string; moved: boolean }
  | { ok: false; error: string; diagnostics: Diagnostic[] };

export interface ResumeRunners {
  byId: (runnerId: string) => Promise<RunnerHandle>;
  /** The configured runner: where a run goes when no target is given and its own runner does not answer. */
  fallback: () => Promise<RunnerHandle>;
}

export interface ResumeOptions {
  /** The runner to continue on (the dispatcher's choice). Absent: the run's own if it answers, else the fallback. */
  target?: RunnerHandle;
}

const RESUMABLE: readonly RunStatus[] = ["stopped", "failed", "lost"];

/** The run's own runner when it answers, else the configured one. */
async function defaultTarget(ownId: string, runners: ResumeRunners): Promise<RunnerHandle> {
  const own = await runners.byId(ownId).catch(() => null);
  if (own) {
    try {
      await own.status();
      return own;
    } catch (e) {
      if (!isAppError(e)) throw e;
    }
  }
  const fallback = await runners.fallback();
  return fallback.id === ownId && own ? own : fallback;
}

export async function resumeRun(db: Db, workspaceId: string, id: string, runners: ResumeRunners, opts: ResumeOptions = {}): Promise<ResumeRunResult> {
  const run = await db.run.findFirst({
    where: { id, workspaceId },
    select: {
      id: true,
      workspaceId: true,
      kind: true,
      status: true,
      runnerId: true,
      lastSeq: true,
      attempt: true,
      attemptOpen: true,
      parentRunId: true,
      parentStep: true,
      version: { select: { files: true } },
    },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
  if (run.kind !== "train") throw new AppError("BAD_INPUT", "only train runs can be resumed (they have checkpoints)");
  if (!RESUMABLE.includes(run.status)) {
    throw new AppError("CONFLICT", `run is ${run.status}: only a stopped, failed or lost run can be resumed`);
  }
  if (!run.runnerId) throw new AppError("BAD_INPUT", "the run never reached a runner, so there is nothing to resume");

  const runner = opts.target ?? (await defaultTarget(run.runnerId, runners));
  const moved = runner.id !== run.runnerId;
  // The attempt it ended may still be running on its own runner (stopped here while it was unreachable):
  // end that one there first (stop waits for it), so the new attempt starts from where it really stopped.
  if (!moved && run.attemptOpen) await runner.stop(run.id, run.attempt);
  if (moved) await moveRunTo(db, run, runner);
  else await handBackEventLog(db, run, runner);

  const files = parseStoredFiles(run.version.files);
  const initFrom = await forkStart(db, run);
  const workspacePart = await workspaceRunSpec(db, run.workspaceId, files, "train");
  const attempt = run.attempt + 1;
  // last_seq: the runner never numbers an event at or below what is stored here.
  const res = await runner.start({ run_id: run.id, attempt, kind: "train", files, ...workspacePart, resume: true, last_seq: run.lastSeq, ...(initFrom ? { init_from: initFrom } : {}) });
  if (!res.ok) return { ok: false, error: res.error, diagnostics: res.diagnostics };

  const runnerId = run.runnerId;
  if (!(await lifecycle.resumeRun(db, { id: run.id, runnerId, attempt: run.attempt }, { attempt, runnerId: runner.id, movedFrom: moved ? runnerId : null }))) {
    // Someone else resumed (or stopped) it meanwhile: this attempt must not run beside theirs.
    await runner.stop(run.id, attempt).catch(() => undefined);
    throw new AppError("CONFLICT", "the run changed while it was being resumed (resumed or stopped elsewhere); reload and try again");
  }
  if (moved) notifyRunMoved(run.id);
  else notifyRunStarted(run.id);
  return { ok: true, runId: run.id, runnerId: runner.id, moved };
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
