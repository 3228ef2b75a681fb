/** Reading runs back: the runs table's pages, one run's detail, its trajectories and its event log. */
import { meanRewardOf, servedEvent, type RunConfig, type ServedRunEvent, type Diagnostic, type EvalMetrics, type StepMetrics } from "@contracts";
import { AppError } from "@/server/errors";
import { queuePosition } from "@/features/run-lifecycle/server";
import { parseStoredFiles } from "@/features/experiments/server";
import { fromDbKind, rowToEvent, rowToTrajectory } from "@/server/run-convert";
import type { DbOrTx } from "@/server/db-types";
import { listRunsTable } from "./runs-table";
import { readArtClient } from "@/features/art";
import { seesRunnerDetails, type RunnerViewer } from "@/features/runners/server";

/**
 * The workspace's runs, a page at a time: filters, sort, search and cursor as the runs table takes them
 * (runs-table.ts); `{ experimentId, limit }` alone is the editor's recent runs, newest first.
 */
export const listRuns = listRunsTable;

/**
 * One run, as `viewer` may see it: the runner's address and the checkpoints' paths (on the runner's disk) only
 * for a viewer who sees that runner's details (features/runners: the instance's operator, or an admin of the
 * workspace that registered it); null for everyone else, and for a caller that does not say who it is.
 */
export async function getRun(db: DbOrTx, workspaceId: string, id: string, viewer: Omit<RunnerViewer, "workspaceId"> = { role: "viewer", operator: false }) {
  const run = await db.run.findFirst({
    where: { id, workspaceId },
    include: {
      experiment: { select: { id: true, name: true } },
      version: { select: { id: true, number: true, files: true, createdAt: true } },
      runner: { select: { name: true, url: true, workspaceId: true } },
      steps: { orderBy: { step: "asc" } },
      checkpoints: { orderBy: { step: "asc" } },
    },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
  const details = seesRunnerDetails(run.runner, { ...viewer, workspaceId });
  const evalEvents = await db.runEvent.findMany({
    where: { runId: id, type: "eval.finished" },
    orderBy: { seq: "asc" },
    select: { payload: true },
  });
  return {
    id: run.id,
    number: run.number,
    kind: fromDbKind(run.kind),
    status: run.status,
    /** 1 when first started, +1 for each resume or move: the page folds status by attempt (status-fold.ts). */
    attempt: run.attempt,
    /** A waiting queued run's place (1 = next); null otherwise. */
    queuePosition: run.status === "queued" ? await queuePosition(db, run.id) : null,
    error: run.error,
    diagnostics: (Array.isArray(run.diagnostics) ? run.diagnostics : []) as Diagnostic[],
    config: run.config as unknown as RunConfig,
    baseModel: run.baseModel,
    seed: run.seed,
    evalModel: run.evalModel,
    parentRunId: run.parentRunId,
    parentStep: run.parentStep,
    tags: run.tags,
    notes: run.notes,
    codeHash: run.codeHash,
    tasksHash: run.tasksHash,
    experiment: run.experiment,
    version: { ...run.version, files: parseStoredFiles(run.version.files) },
    /** `url` null: not the caller's to see (details above). */
    runner: run.runner ? { name: run.runner.name, url: details ? run.runner.url : null } : null,
    /** ART runs: who drives it (entity, project, name, token); null for every other kind. */
    artClient: readArtClient(run.artClient),
    createdAt: run.createdAt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    lastHeartbeatAt: run.lastHeartbeatAt,
    lostSince: run.lostSince,
    lastSeq: run.lastSeq,
    currentStep: run.currentStep,
    rolloutCount: run.rolloutCount,
    errorCount: run.errorCount,
    /** contracts/mean-reward.ts: the one definition of a run's mean reward. */
    rewardMean: meanRewardOf(run),
    steps: run.steps.map((s) => s.metrics as unknown as StepMetrics),
    evals: evalEvents.map((e) => e.payload as unknown as EvalMetrics),
    /** `path` (where the runner keeps it) null unless the caller sees the runner's details. */
    checkpoints: run.checkpoints.map((c) => ({ step: c.step, path: details ? c.path : null, sizeBytes: Number(c.sizeBytes), createdAt: c.createdAt })),
  };
}

async function assertRun(db: DbOrTx, workspaceId: string, runId: string) {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
}

/** Finished rollouts in seq order; `cursor` is the last seq seen. */
export async function listTrajectories(
  db: DbOrTx,
  workspaceId: string,
  input: { runId: string; step?: number; split?: "train" | "val"; limit?: number; cursor?: number | null },
) {
  await assertRun(db, workspaceId, input.runId);
  const limit = input.limit ?? 100;
  const rows = await db.trajectory.findMany({
    where: {
      runId: input.runId,
      ...(input.step !== undefined ? { step: input.step } : {}),
      ...(input.split ? { split: input.split } : {}),
      ...(input.cursor != null ? { seq: { gt: input.cursor } } : {}),
    },
    orderBy: { seq: "asc" },
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  return { items: page.map(rowToTrajectory), nextCursor: rows.length > limit ? (page.at(-1)?.seq ?? null) : null };
}

/** The stored event log after `afterSeq`, in order, at most `limit` events, as served (no checkpoint paths). */
export async function listEvents(db: DbOrTx, workspaceId: string, input: { runId: string; afterSeq: number; limit?: number }): Promise<ServedRunEvent[]> {
  await assertRun(db, workspaceId, input.runId);
  const rows = await db.runEvent.findMany({
    where: { runId: input.runId, seq: { gt: input.afterSeq } },
    orderBy: { seq: "asc" },
    take: input.limit ?? 500,
  });
  return rows.map((row) => servedEvent(rowToEvent(row)));
}
