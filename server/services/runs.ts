/**
 * Runs: freeze an immutable snapshot (version + parsed config + hashes) into a Run, hand it to a runner,
 * and read runs back (list, detail, trajectories, the event log). A run refused before it started
 * (diagnostics) leaves no row; a row whose runner cannot be reached is failed in the same call, so no run is
 * ever left queued or running by a failed start.
 */
import {
  RunConfig,
  type RunEvent,
  type Diagnostic,
  type EvalMetrics,
  type ExperimentFiles,
  type RunKind,
  type StepMetrics,
} from "@contracts";
import { findKeyOffset, jsonErrorOffset, offsetToPosition } from "@/gpu-runner/src/experiment/json-position";
import { Prisma } from "@/generated/prisma/client";
import { AppError, isAppError, rootMessage } from "../errors";
import { type RunnerHandle } from "../runner-client";
import { codeHash, parseStoredFiles, saveVersion, tasksHash } from "./experiments";
import { fromDbKind, rowToEvent, rowToTrajectory, toDbKind } from "./run-convert";
import type { Db, DbOrTx } from "./types";
import { notifyRunStarted, emitRunStatus } from "./run-hooks";

export type StartRunInput = {
  experimentId: string;
  files: ExperimentFiles;
  kind: RunKind;
  /** Eval runs: `<run>@<step>`; absent = the base model. */
  evalModel?: string;
};

export type StartRunResult =
  | { ok: true; runId: string }
  /** Refused before starting (no run created), or created and failed at once (runId set, status failed). */
  | { ok: false; diagnostics: Diagnostic[]; error: string; runId?: string };

const isError = (d: Diagnostic) => (d.severity ?? "error") === "error";

function diagAt(text: string, path: readonly (string | number)[], message: string): Diagnostic {
  const offset = findKeyOffset(text, path);
  const pos = offset === undefined ? { line: 1, column: 1 } : offsetToPosition(text, offset);
  return { file: "config.json", line: pos.line, column: pos.column, message, severity: "error" };
}

/** config.json → RunConfig with defaults applied, or diagnostics positioned in config.json. */
export function parseConfig(text: string): { ok: true; config: RunConfig } | { ok: false; diagnostics: Diagnostic[] } {
  let raw: unknown;
  try {
    raw = text.trim() === "" ? {} : JSON.parse(text);
  } catch (err) {
    const pos = offsetToPosition(text, jsonErrorOffset(text, err));
    return {
      ok: false,
      diagnostics: [{ file: "config.json", ...pos, message: `config.json is not valid JSON: ${(err as Error).message}`, severity: "error" }],
    };
  }
  const parsed = RunConfig.safeParse(raw);
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    diagnostics: parsed.error.issues.flatMap((issue) => {
      const path = issue.path.filter((k): k is string | number => typeof k !== "symbol");
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => diagAt(text, [...path, key], `${[...path, key].join(".")}: unknown field`));
      }
      return [diagAt(text, path, `${path.join(".") || "(root)"}: ${issue.message}`)];
    }),
  };
}

function summarize(diagnostics: Diagnostic[]): string {
  const errors = diagnostics.filter(isError);
  const first = errors[0];
  if (!first) return "refused";
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return `${first.file}:${first.line}:${first.column}: ${first.message}${more}`;
}

async function nextRunNumber(tx: DbOrTx, workspaceId: string): Promise<number> {
  const agg = await tx.run.aggregate({ where: { workspaceId }, _max: { number: true } });
  return (agg._max.number ?? 0) + 1;
}

/** Marks a run failed unless it already finished; tells socket subscribers. */
export async function failRun(db: DbOrTx, runId: string, error: string, diagnostics?: Diagnostic[]): Promise<boolean> {
  const res = await db.run.updateMany({
    where: { id: runId, status: { in: ["queued", "running"] } },
    data: {
      status: "failed",
      error,
      finishedAt: new Date(),
      ...(diagnostics && diagnostics.length > 0 ? { diagnostics: diagnostics as Prisma.InputJsonValue } : {}),
    },
  });
  if (res.count > 0) {
    const run = await db.run.findUnique({ where: { id: runId }, select: { lastSeq: true } });
    emitRunStatus({ runId, status: "failed", error, lastSeq: run?.lastSeq ?? 0 });
  }
  return res.count > 0;
}

export async function startRun(
  db: Db,
  workspaceId: string,
  getRunner: () => Promise<RunnerHandle>,
  input: StartRunInput,
  opts: { createdById?: string | null } = {},
): Promise<StartRunResult> {
  const exp = await db.experiment.findFirst({ where: { id: input.experimentId, workspaceId }, select: { id: true } });
  if (!exp) throw new AppError("NOT_FOUND", `experiment ${input.experimentId} not found`);
  if (input.kind !== "eval" && input.evalModel) {
    throw new AppError("BAD_INPUT", "evalModel is only for eval runs");
  }

  // 1. The exact files become (or match) an immutable version.
  const version = await saveVersion(db, workspaceId, input.experimentId, input.files);

  // 2. The config is checked here first: a broken config.json needs no runner to be refused.
  const parsed = parseConfig(input.files["config.json"]);
  if (!parsed.ok) return { ok: false, diagnostics: parsed.diagnostics, error: summarize(parsed.diagnostics) };
  const config = parsed.config;

  // 3. The runner compiles and checks everything (scenario, reward, tasks, config) without starting.
  let runner: RunnerHandle | undefined;
  let unreachable: AppError | undefined;
  try {
    runner = await getRunner();
    const diagnostics = await runner.validate({ files: input.files, kind: input.kind });
    if (diagnostics.some(isError)) return { ok: false, diagnostics, error: summarize(diagnostics) };
  } catch (e) {
    if (!isAppError(e) || (e.code !== "RUNNER_UNAVAILABLE" && e.code !== "RUNNER_ERROR")) throw e;
    unreachable = e;
  }

  // 4. Accepted (or the runner cannot be asked): freeze the run.
  let runId: string | undefined;
  for (let attempt = 0; !runId; attempt++) {
    try {
      runId = await db.$transaction(async (tx) => {
        const number = await nextRunNumber(tx, workspaceId);
        const run = await tx.run.create({
          data: {
            number,
            workspaceId,
            experimentId: input.experimentId,
            versionId: version.versionId,
            runnerId: runner?.id ?? null,
            createdById: opts.createdById ?? null,
            kind: toDbKind(input.kind),
            status: "queued",
            config: config as unknown as Prisma.InputJsonValue,
            baseModel: config.model,
            seed: config.seed,
            evalModel: input.evalModel ?? null,
            codeHash: codeHash(input.files),
            tasksHash: tasksHash(input.files),
          },
          select: { id: true },
        });
        return run.id;
      });
    } catch (e) {
      // Two starts racing for the same per-workspace number: take the next one.
      if (attempt < 5 && e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002") continue;
      throw e;
    }
  }

  // 5. Hand it to the runner; any failure fails the row now.
  if (!runner || unreachable) {
    const error = unreachable?.message ?? "no runner available";
    await failRun(db, runId, error);
    return { ok: false, runId, diagnostics: [], error };
  }
  try {
    const res = await runner.start({ run_id: runId, kind: input.kind, files: input.files, eval_model: input.evalModel });
    if (!res.ok) {
      await failRun(db, runId, res.error, res.diagnostics);
      return { ok: false, runId, diagnostics: res.diagnostics, error: res.error };
    }
  } catch (e) {
    const error = isAppError(e) ? e.message : `runner '${runner.name}' at ${runner.url} failed to start the run: ${rootMessage(e)}`;
    await failRun(db, runId, error);
    return { ok: false, runId, diagnostics: [], error };
  }
  const now = new Date();
  await db.run.updateMany({
    where: { id: runId, status: "queued" },
    data: { status: "running", startedAt: now, lastHeartbeatAt: now },
  });
  emitRunStatus({ runId, status: "running", error: null, lastSeq: 0 });
  notifyRunStarted(runId);
  return { ok: true, runId };
}

export async function stopRun(db: Db, workspaceId: string, id: string, getRunner: (runnerId: string) => Promise<RunnerHandle>) {
  const run = await db.run.findFirst({ where: { id, workspaceId }, select: { id: true, status: true, runnerId: true } });
  if (!run) throw new AppError("NOT_FOUND", `run ${id} not found`);
  if (run.status !== "queued" && run.status !== "running") return { id, status: fromDbStatus(run.status) };
  if (!run.runnerId) {
    await markStopped(db, id);
    return { id, status: "stopped" as const };
  }
  const runner = await getRunner(run.runnerId);
  // The runner stops it and logs run.finished(stopped), which ingestion stores. A runner that no longer
  // knows the run cannot stop it: the run is over already, so record it as stopped here.
  const status = await runner.status();
  if (!status.runs.some((r) => r.run_id === id)) {
    await markStopped(db, id);
    return { id, status: "stopped" as const };
  }
  await runner.stop(id);
  return { id, status: "stopping" as const };
}

async function markStopped(db: Db, id: string) {
  const res = await db.run.updateMany({
    where: { id, status: { in: ["queued", "running"] } },
    data: { status: "stopped", finishedAt: new Date() },
  });
  if (res.count > 0) {
    const run = await db.run.findUnique({ where: { id }, select: { lastSeq: true } });
    emitRunStatus({ runId: id, status: "stopped", error: null, lastSeq: run?.lastSeq ?? 0 });
  }
}

const fromDbStatus = (s: string) => s as "queued" | "running" | "completed" | "failed" | "stopped";

const rewardMean = (r: { rewardSum: number; rewardCount: number }) => (r.rewardCount > 0 ? r.rewardSum / r.rewardCount : null);

export async function listRuns(
  db: DbOrTx,
  workspaceId: string,
  input: { experimentId?: string; limit?: number; cursor?: string | null },
) {
  const limit = input.limit ?? 50;
  const rows = await db.run.findMany({
    where: { workspaceId, ...(input.experimentId ? { experimentId: input.experimentId } : {}) },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
    ...(input.cursor ? { cursor: { id: input.cursor }, skip: 1 } : {}),
    select: {
      id: true,
      number: true,
      kind: true,
      status: true,
      createdAt: true,
      startedAt: true,
      finishedAt: true,
      rewardSum: true,
      rewardCount: true,
      rolloutCount: true,
      errorCount: true,
      currentStep: true,
      error: true,
      experimentId: true,
      baseModel: true,
      experiment: { select: { name: true } },
      version: { select: { number: true } },
    },
  });
  const page = rows.slice(0, limit);
  return {
    items: page.map((r) => ({
      id: r.id,
      number: r.number,
      kind: fromDbKind(r.kind),
      status: r.status,
      experimentId: r.experimentId,
      experimentName: r.experiment.name,
      versionNumber: r.version.number,
      baseModel: r.baseModel,
      createdAt: r.createdAt,
      startedAt: r.startedAt,
      finishedAt: r.finishedAt,
      rewardMean: rewardMean(r),
      rolloutCount: r.rolloutCount,
      errorCount: r.errorCount,
      currentStep: r.currentStep,
      error: r.error,
    })),
    nextCursor: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
  };
}

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
    error: run.error,
    diagnostics: (Array.isArray(run.diagnostics) ? run.diagnostics : []) as Diagnostic[],
    config: run.config as unknown as RunConfig,
    baseModel: run.baseModel,
    seed: run.seed,
    evalModel: run.evalModel,
    parentRunId: run.parentRunId,
    parentStep: run.parentStep,
    tags: run.tags,
    codeHash: run.codeHash,
    tasksHash: run.tasksHash,
    experiment: run.experiment,
    version: { ...run.version, files: parseStoredFiles(run.version.files) },
    runner: run.runner,
    createdAt: run.createdAt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    lastHeartbeatAt: run.lastHeartbeatAt,
    lastSeq: run.lastSeq,
    currentStep: run.currentStep,
    rolloutCount: run.rolloutCount,
    errorCount: run.errorCount,
    rewardMean: rewardMean(run),
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
