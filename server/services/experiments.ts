/**
 * Experiments and their immutable versions. A save whose files equal the latest version's (by filesHash)
 * makes no new version; anything else gets the next number. Runs point at the exact version they ran.
 */
import { createHash } from "node:crypto";
import { codePaths, RolloutError, sortPaths, type Diagnostic, type ExperimentFiles, type RunKind } from "@contracts";
import { Prisma } from "@/generated/prisma/client";
import { AppError } from "../errors";
import type { Db, DbOrTx } from "./types";
import { type RunnerHandle } from "../runner-client";
import { fromDbKind } from "./run-convert";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** sha256 of the files in a fixed order, so key order in the stored JSON never changes the hash. */
export function filesHash(files: ExperimentFiles): string {
  return sha256(JSON.stringify(sortPaths(Object.keys(files)).map((name) => [name, files[name]])));
}
/** The code a run executes (every TypeScript file); config and tasks are hashed and frozen separately. */
export function codeHash(files: ExperimentFiles): string {
  return sha256(JSON.stringify(codePaths(files).map((name) => [name, files[name]])));
}
export function tasksHash(files: ExperimentFiles): string {
  return sha256(files["tasks.jsonl"]);
}

/**
 * Stored JSON back to files. Versions are validated when saved; one written by hand with a required file
 * missing reads it as empty, and entries that are not strings are dropped, so a bad row never breaks a page.
 */
export function parseStoredFiles(value: Prisma.JsonValue): ExperimentFiles {
  const obj = (value && typeof value === "object" && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
  const files: Record<string, string> = { "scenario.ts": "", "reward.ts": "", "tasks.jsonl": "", "config.json": "" };
  for (const [name, text] of Object.entries(obj)) if (typeof text === "string") files[name] = text;
  return files as ExperimentFiles;
}

export async function listExperiments(db: DbOrTx, workspaceId: string) {
  const rows = await db.experiment.findMany({
    where: { workspaceId },
    orderBy: { updatedAt: "desc" },
    select: {
      id: true,
      name: true,
      description: true,
      updatedAt: true,
      versions: { orderBy: { number: "desc" }, take: 1, select: { number: true } },
      _count: { select: { runs: true } },
    },
  });
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description,
    updatedAt: r.updatedAt,
    latestVersionNumber: r.versions[0]?.number ?? 0,
    runCount: r._count.runs,
  }));
}

async function findExperiment(db: DbOrTx, workspaceId: string, id: string) {
  const exp = await db.experiment.findFirst({ where: { id, workspaceId } });
  if (!exp) throw new AppError("NOT_FOUND", `experiment ${id} not found`);
  return exp;
}

/** The experiment with its latest version (or the given version number). */
export async function getExperiment(db: DbOrTx, workspaceId: string, id: string, versionNumber?: number) {
  const exp = await findExperiment(db, workspaceId, id);
  const version = await db.experimentVersion.findFirst({
    where: { experimentId: id, ...(versionNumber !== undefined ? { number: versionNumber } : {}) },
    orderBy: { number: "desc" },
  });
  if (!version) {
    throw new AppError("NOT_FOUND", versionNumber !== undefined ? `experiment ${id} has no version ${versionNumber}` : `experiment ${id} has no versions`);
  }
  return {
    id: exp.id,
    name: exp.name,
    description: exp.description,
    version: { id: version.id, number: version.number, files: parseStoredFiles(version.files), createdAt: version.createdAt },
  };
}

export async function listVersions(db: DbOrTx, workspaceId: string, id: string) {
  await findExperiment(db, workspaceId, id);
  return db.experimentVersion.findMany({
    where: { experimentId: id },
    orderBy: { number: "desc" },
    select: { id: true, number: true, filesHash: true, createdAt: true, _count: { select: { runs: true } } },
  });
}

function isUniqueViolation(e: unknown): boolean {
  return e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002";
}

/** Save files as the experiment's next version, unless they equal the latest one. */
export async function saveVersion(
  db: Db,
  workspaceId: string,
  id: string,
  files: ExperimentFiles,
): Promise<{ versionId: string; number: number; created: boolean }> {
  await findExperiment(db, workspaceId, id);
  const hash = filesHash(files);
  // Two saves racing for the same number: the loser retries with the next one.
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.$transaction(async (tx) => {
        const latest = await tx.experimentVersion.findFirst({
          where: { experimentId: id },
          orderBy: { number: "desc" },
          select: { id: true, number: true, filesHash: true },
        });
        if (latest && latest.filesHash === hash) return { versionId: latest.id, number: latest.number, created: false };
        const number = (latest?.number ?? 0) + 1;
        const v = await tx.experimentVersion.create({
          data: { experimentId: id, number, files, filesHash: hash },
          select: { id: true },
        });
        await tx.experiment.update({ where: { id }, data: { updatedAt: new Date() } });
        return { versionId: v.id, number, created: true };
      });
    } catch (e) {
      if (attempt < 5 && isUniqueViolation(e)) continue;
      throw e;
    }
  }
}

export async function createExperiment(
  db: Db,
  workspaceId: string,
  input: { name: string; description?: string; files: ExperimentFiles },
): Promise<{ id: string }> {
  try {
    return await db.experiment.create({
      data: {
        workspaceId,
        name: input.name,
        description: input.description ?? "",
        versions: { create: { number: 1, files: input.files, filesHash: filesHash(input.files) } },
      },
      select: { id: true },
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw new AppError("CONFLICT", `an experiment named "${input.name}" already exists`);
    throw e;
  }
}

/** Compile-check the files on the runner (dry compile, no engine): diagnostics mapped to the user's lines. */
export async function validateFiles(runner: RunnerHandle, files: ExperimentFiles, kind: RunKind): Promise<{ diagnostics: Diagnostic[] }> {
  return { diagnostics: await runner.validate({ files, kind }) };
}

/** Distinct runtime errors read from one run (the editor marks each one's frames; a run may fail thousands of rollouts). */
const RUNTIME_ERROR_ROWS = 500;
const RUNTIME_ERRORS_SHOWN = 20;

export interface RuntimeErrorSummary {
  kind: RolloutError["kind"];
  message: string;
  stack: string | null;
  /** Rollouts (among those read) that failed with this exact error. */
  count: number;
}

/**
 * The runtime errors of the experiment's latest run that ran anything (refused runs have no rollouts), with
 * that run's code files: the editor shows the errors at their frames only while its code equals this code.
 * null when no run has produced rollouts yet.
 */
export async function latestRuntimeErrors(db: DbOrTx, workspaceId: string, experimentId: string) {
  await findExperiment(db, workspaceId, experimentId);
  const run = await db.run.findFirst({
    where: { workspaceId, experimentId, rolloutCount: { gt: 0 } },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    select: { id: true, number: true, kind: true, status: true, errorCount: true, version: { select: { files: true } } },
  });
  if (!run) return null;
  const rows = run.errorCount
    ? await db.trajectory.findMany({
        where: { runId: run.id, error: { not: Prisma.DbNull } },
        orderBy: { seq: "asc" },
        take: RUNTIME_ERROR_ROWS,
        select: { error: true },
      })
    : [];
  const byKey = new Map<string, RuntimeErrorSummary>();
  for (const row of rows) {
    const parsed = RolloutError.safeParse(row.error);
    if (!parsed.success) continue;
    const { kind, message, stack } = parsed.data;
    const key = JSON.stringify([kind, message, stack ?? null]);
    const seen = byKey.get(key);
    if (seen) seen.count++;
    else byKey.set(key, { kind, message, stack: stack ?? null, count: 1 });
  }
  const files = parseStoredFiles(run.version.files);
  return {
    run: { id: run.id, number: run.number, kind: fromDbKind(run.kind), status: run.status, errorCount: run.errorCount },
    /** The run's TypeScript files only: what "the same code" means (config and tasks do not move a stack frame). */
    code: Object.fromEntries(codePaths(files).map((p) => [p, files[p]!])) as Record<string, string>,
    errors: [...byKey.values()].sort((a, b) => b.count - a.count).slice(0, RUNTIME_ERRORS_SHOWN),
  };
}
