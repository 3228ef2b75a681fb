/**
 * Experiments and their immutable versions. A save whose files equal the latest version's (by filesHash)
 * makes no new version; anything else gets the next number. Runs point at the exact version they ran.
 */
import { createHash } from "node:crypto";
import { codePaths, RolloutError, sortPaths, type Diagnostic, type ExperimentFiles, type RunKind } from "@contracts";
import { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import type { Db, DbOrTx, Tx } from "@/server/db-types";
import { type RunnerHandle } from "@/server/runner-client";
import { fromDbKind } from "@/server/run-convert";

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

/** Archived experiments are left out unless asked for; their runs stay in the runs table either way. */
export async function listExperiments(db: DbOrTx, workspaceId: string, opts: { includeArchived?: boolean } = {}) {
  const rows = await db.experiment.findMany({
    where: { workspaceId, ...(opts.includeArchived ? {} : { archivedAt: null }) },
    orderBy: { updatedAt: "desc" },
    select: {
      id: true,
      name: true,
      description: true,
      updatedAt: true,
      archivedAt: true,
      versions: { orderBy: { number: "desc" }, take: 1, select: { number: true } },
      _count: { select: { runs: true } },
    },
  });
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description,
    updatedAt: r.updatedAt,
    archivedAt: r.archivedAt,
    latestVersionNumber: r.versions[0]?.number ?? 0,
    runCount: r._count.runs,
  }));
}

export async function findExperiment(db: DbOrTx, workspaceId: string, id: string) {
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
    include: { createdBy: { select: { name: true, email: true } } },
  });
  if (!version) {
    throw new AppError("NOT_FOUND", versionNumber !== undefined ? `experiment ${id} has no version ${versionNumber}` : `experiment ${id} has no versions`);
  }
  return {
    id: exp.id,
    name: exp.name,
    description: exp.description,
    archivedAt: exp.archivedAt,
    version: {
      id: version.id,
      number: version.number,
      files: parseStoredFiles(version.files),
      createdAt: version.createdAt,
      author: authorName(version.createdBy),
      restoredFrom: version.restoredFrom,
    },
  };
}

/** Who saved a version, for people: their name, else their email; null = made by Rollbook (a default experiment). */
export function authorName(user: { name: string; email: string } | null): string | null {
  return user ? user.name.trim() || user.email : null;
}

export function isUniqueViolation(e: unknown): boolean {
  return e instanceof Prisma.PrismaClientKnownRequestError && e.code === "P2002";
}

export interface SaveOptions {
  /**
   * The version number the caller's text was based on (the editor sends the one it loaded). When a newer
   * version with different files exists, the save is refused (CONFLICT) instead of silently burying it.
   */
  baseVersion?: number;
  /** Who saved it (null: the system). */
  createdById?: string | null;
  /** A restore: the number of the version whose files these are. */
  restoredFrom?: number | null;
}

export type SaveResult = { versionId: string; number: number; created: boolean };

const latestSelect = {
  id: true,
  number: true,
  filesHash: true,
  createdAt: true,
  createdBy: { select: { name: true, email: true } },
} as const;
type LatestVersion = { id: string; number: number; filesHash: string; createdAt: Date; createdBy: { name: string; email: string } | null };

/** "2026-11-24 09:15:02 UTC": the same instant for everyone reading the message, whatever their zone. */
const fmtUtc = (d: Date) => `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;

/**
 * The stale-tab rule, shared by save, restore and runs.start: files equal to the latest version are never a
 * conflict (nothing would be lost); otherwise a latest version newer than `baseVersion` refuses the write.
 */
function assertFresh(latest: LatestVersion | null, hash: string, baseVersion: number | undefined): void {
  if (baseVersion === undefined || !latest || latest.filesHash === hash) return;
  if (baseVersion > latest.number) {
    throw new AppError("BAD_INPUT", `baseVersion: version ${baseVersion} does not exist (the latest is version ${latest.number})`);
  }
  if (latest.number === baseVersion) return;
  const who = authorName(latest.createdBy) ?? "Rollbook";
  throw new AppError(
    "CONFLICT",
    `version ${latest.number} was saved by ${who} at ${fmtUtc(latest.createdAt)} after you opened version ${baseVersion} — ` +
      "your text is kept in the editor; review the changes (diff) and save again",
  );
}

async function latestVersion(db: DbOrTx, experimentId: string): Promise<LatestVersion | null> {
  return db.experimentVersion.findFirst({ where: { experimentId }, orderBy: { number: "desc" }, select: latestSelect });
}

/** Read-only: throws CONFLICT when writing these files on top of `baseVersion` would bury a newer version. */
export async function checkFresh(db: DbOrTx, experimentId: string, files: ExperimentFiles, baseVersion: number | undefined): Promise<void> {
  if (baseVersion === undefined) return;
  assertFresh(await latestVersion(db, experimentId), filesHash(files), baseVersion);
}

/** The latest version when it holds exactly these files (a refused run start may point a failed row at it). */
export async function latestIfSame(db: DbOrTx, experimentId: string, files: ExperimentFiles): Promise<{ versionId: string; number: number } | null> {
  const latest = await latestVersion(db, experimentId);
  return latest && latest.filesHash === filesHash(files) ? { versionId: latest.id, number: latest.number } : null;
}

/**
 * Inside the caller's transaction: the latest version when the files equal it, else the next number (after
 * the stale-tab check). A unique violation on the number (two writers) aborts the transaction: the caller
 * retries the whole transaction (withVersionRetry), and the retry sees the other writer's version.
 */
export async function writeVersion(tx: Tx, experimentId: string, files: ExperimentFiles, opts: SaveOptions = {}): Promise<SaveResult> {
  const hash = filesHash(files);
  const latest = await latestVersion(tx, experimentId);
  if (latest && latest.filesHash === hash) return { versionId: latest.id, number: latest.number, created: false };
  assertFresh(latest, hash, opts.baseVersion);
  const number = (latest?.number ?? 0) + 1;
  const v = await tx.experimentVersion.create({
    data: { experimentId, number, files, filesHash: hash, createdById: opts.createdById ?? null, restoredFrom: opts.restoredFrom ?? null },
    select: { id: true },
  });
  await tx.experiment.update({ where: { id: experimentId }, data: { updatedAt: new Date() } });
  return { versionId: v.id, number, created: true };
}

/** Runs `fn` (one transaction) again when it lost a race for a unique number (a version's or a run's). */
export async function withNumberRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt < 5 && isUniqueViolation(e)) continue;
      throw e;
    }
  }
}

/** Save files as the experiment's next version, unless they equal the latest one. */
export async function saveVersion(db: Db, workspaceId: string, id: string, files: ExperimentFiles, opts: SaveOptions = {}): Promise<SaveResult> {
  await findExperiment(db, workspaceId, id);
  return withNumberRetry(() => db.$transaction((tx) => writeVersion(tx, id, files, opts)));
}

export async function createExperiment(
  db: DbOrTx,
  workspaceId: string,
  input: { name: string; description?: string; files: ExperimentFiles },
  createdById: string | null = null,
): Promise<{ id: string }> {
  try {
    return await db.experiment.create({
      data: {
        workspaceId,
        name: input.name,
        description: input.description ?? "",
        versions: { create: { number: 1, files: input.files, filesHash: filesHash(input.files), createdById } },
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
