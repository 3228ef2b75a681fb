/** Reading runs back: the runs table's pages, one run's detail, its trajectories and its event log. */
import { meanRewardOf, type RunConfig, type RunEvent, type Diagnostic, type EvalMetrics, type StepMetrics } from "@contracts";
import { AppError } from "@/server/errors";
import { queuePosition } from "@/features/run-lifecycle/server";
import { parseStoredFiles } from "@/features/experiments/server";
import { fromDbKind, rowToEvent, rowToTrajectory } from "@/server/run-convert";
import type { DbOrTx } from "@/server/db-types";
import { listRunsTable } from "./runs-table";
import { readArtClient } from "@/features/art";

/**
 * The workspace's runs, a page at a time: filters, sort, search and cursor as the runs table takes them
 * (runs-table.ts); `{ experimentId, limit }` alone is the editor's recent runs, newest first.
 */
export const listRuns = listRunsTable;

export async function getRun(db: DbOrTx, workspaceId: string, id: string) {
  const run = await db.run.findFirst({
    where: { id, workspaceId },
    include: {
      experiment: { select: { id: true, name: true } },
      version: { select: { id: true, number: true, files: true, createdAt: true } },
      runner: { select: { name: true, url: true } },
      steps: { orderBy: { step: "asc" } },
      checkpoints: { orderBy: { step: "asc" } },
    },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
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
    runner: run.runner,
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
    checkpoints: run.checkpoints.map((c) => ({ step: c.step, path: c.path, sizeBytes: Number(c.sizeBytes), createdAt: c.createdAt })),
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

/** The stored event log after `afterSeq`, in order, at most `limit` events. */
export async function listEvents(db: DbOrTx, workspaceId: string, input: { runId: string; afterSeq: number; limit?: number }): Promise<RunEvent[]> {
  await assertRun(db, workspaceId, input.runId);
  const rows = await db.runEvent.findMany({
    where: { runId: input.runId, seq: { gt: input.afterSeq } },
    orderBy: { seq: "asc" },
    take: input.limit ?? 500,
  });
  return rows.map(rowToEvent);
}
