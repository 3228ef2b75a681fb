/**
 * Experiments as projects: rename, duplicate, archive, delete, the version history (who saved what, when)
 * and restore. History is never rewritten: a restore is a new version whose files are an old one's.
 */
import { ACTIVE_RUN_STATUSES, type ExperimentFiles } from "@contracts";
import { AppError } from "@/server/errors";
import { authorName, createExperiment, findExperiment, isUniqueViolation, parseStoredFiles, withNumberRetry, writeVersion, type SaveResult } from "./experiments";
import type { Db, DbOrTx } from "@/server/db-types";

/** The contract caps names at 120 characters (features/experiments/server/router.ts ExperimentName). */
const NAME_MAX = 120;

const taken = (name: string) => new AppError("CONFLICT", `name: an experiment named "${name}" already exists`);

export async function renameExperiment(db: DbOrTx, workspaceId: string, id: string, name: string) {
  const exp = await findExperiment(db, workspaceId, id);
  if (exp.name === name) return { id, name };
  try {
    await db.experiment.update({ where: { id }, data: { name } });
  } catch (e) {
    if (isUniqueViolation(e)) throw taken(name);
    throw e;
  }
  return { id, name };
}

/** "<name> (copy)", then "<name> (copy 2)", …, trimmed so the suffix always fits in the name limit. */
export function copyName(name: string, n: number): string {
  const suffix = n === 1 ? " (copy)" : ` (copy ${n})`;
  return name.slice(0, NAME_MAX - suffix.length).trimEnd() + suffix;
}

/**
 * A new experiment with the latest version's files as its version 1 (saved by the caller), and the same
 * description. Without a name it takes the first free "<name> (copy N)"; a name given is used as is, and a
 * taken one is a CONFLICT naming it.
 */
export async function duplicateExperiment(db: Db, workspaceId: string, id: string, opts: { name?: string; createdById: string | null }) {
  const exp = await findExperiment(db, workspaceId, id);
  const latest = await db.experimentVersion.findFirst({ where: { experimentId: id }, orderBy: { number: "desc" }, select: { files: true } });
  if (!latest) throw new AppError("NOT_FOUND", `experiment ${id} has no versions`);
  const files: ExperimentFiles = parseStoredFiles(latest.files);
  const create = (name: string) => createExperiment(db, workspaceId, { name, description: exp.description, files }, opts.createdById);
  if (opts.name !== undefined) return { ...(await create(opts.name)), name: opts.name };

  const existing = new Set(
    (await db.experiment.findMany({ where: { workspaceId, name: { startsWith: copyName(exp.name, 1).slice(0, -")".length) } }, select: { name: true } })).map((e) => e.name),
  );
  // The names seen above may be taken by the time we insert (another duplicate racing): try the next one.
  for (let n = 1, tries = 0; tries < 20; n++) {
    const name = copyName(exp.name, n);
    if (existing.has(name)) continue;
    tries++;
    try {
      return { ...(await create(name)), name };
    } catch (e) {
      if (e instanceof AppError && e.code === "CONFLICT") continue;
      throw e;
    }
  }
  throw new AppError("CONFLICT", `name: no free "${copyName(exp.name, 1)}" name found; give the copy a name`);
}

/** Archived experiments leave the lists (unless "show archived") but keep their versions and runs, all readable. */
export async function setArchived(db: DbOrTx, workspaceId: string, id: string, archived: boolean) {
  const exp = await findExperiment(db, workspaceId, id);
  if (Boolean(exp.archivedAt) === archived) return { id, archivedAt: exp.archivedAt };
  const row = await db.experiment.update({ where: { id }, data: { archivedAt: archived ? new Date() : null }, select: { archivedAt: true } });
  return { id, archivedAt: row.archivedAt };
}

/**
 * Deletes the experiment with its versions and runs (and, through the runs, their events, trajectories,
 * steps and checkpoint rows; checkpoint files stay on the runner). Refused while a run of it is queued or
 * running: that run would lose its history mid-flight. The experiment row is locked first (FOR UPDATE), so
 * a run being started concurrently either committed before (and is seen here) or waits and then fails on
 * the missing experiment (and startRun stops it on the runner).
 */
export async function deleteExperiment(db: Db, workspaceId: string, id: string) {
  return db.$transaction(async (tx) => {
    const locked = await tx.$queryRaw<{ name: string }[]>`SELECT name FROM "Experiment" WHERE id = ${id} AND "workspaceId" = ${workspaceId} FOR UPDATE`;
    const exp = locked[0];
    if (!exp) throw new AppError("NOT_FOUND", `experiment ${id} not found`);
    const active = await tx.run.findMany({
      where: { experimentId: id, status: { in: [...ACTIVE_RUN_STATUSES] } },
      orderBy: { number: "asc" },
      select: { number: true, status: true },
    });
    if (active.length > 0) {
      const list = active.map((r) => `#${r.number} (${r.status})`).join(", ");
      throw new AppError("CONFLICT", `experiment "${exp.name}" has ${active.length === 1 ? "a run" : "runs"} still going: ${list} — stop ${active.length === 1 ? "it" : "them"} before deleting the experiment`);
    }
    // Runs first: Run.versionId restricts deleting a version a run still points at.
    const runs = await tx.run.deleteMany({ where: { experimentId: id } });
    const versions = await tx.experimentVersion.deleteMany({ where: { experimentId: id } });
    await tx.experiment.delete({ where: { id } });
    return { id, name: exp.name, deletedRuns: runs.count, deletedVersions: versions.count };
  });
}

export type ChangeKind = "added" | "removed" | "modified";

/** Versions per history page: each one's changed files are compared in Postgres, never shipped here. */
export const HISTORY_PAGE = 50;

/**
 * The version history, newest first: number, who saved it and when, what it restored, how many runs ran it,
 * and which files it changed against the version before it (version 1: every file, "added"). The file
 * comparison runs in SQL (jsonb values per key), so a page of versions with megabytes of tasks each costs
 * no transfer.
 */
export async function versionHistory(db: DbOrTx, workspaceId: string, id: string, opts: { before?: number; limit?: number } = {}) {
  await findExperiment(db, workspaceId, id);
  const limit = opts.limit ?? HISTORY_PAGE;
  const rows = await db.experimentVersion.findMany({
    where: { experimentId: id, ...(opts.before !== undefined ? { number: { lt: opts.before } } : {}) },
    orderBy: { number: "desc" },
    take: limit + 1,
    select: {
      id: true,
      number: true,
      createdAt: true,
      restoredFrom: true,
      createdBy: { select: { id: true, name: true, email: true } },
      _count: { select: { runs: true } },
    },
  });
  const page = rows.slice(0, limit);
  const changes = new Map<number, { path: string; change: ChangeKind }[]>();
  if (page.length > 0) {
    const lo = page[page.length - 1]!.number;
    const hi = page[0]!.number;
    const diffs = await db.$queryRaw<{ number: number; path: string; change: ChangeKind }[]>`
      SELECT v.number, k.path,
        CASE WHEN p.files -> k.path IS NULL THEN 'added' WHEN v.files -> k.path IS NULL THEN 'removed' ELSE 'modified' END AS change
      FROM "ExperimentVersion" v
      LEFT JOIN "ExperimentVersion" p ON p."experimentId" = v."experimentId" AND p.number = v.number - 1
      CROSS JOIN LATERAL (
        SELECT jsonb_object_keys(v.files) AS path
        UNION
        SELECT jsonb_object_keys(COALESCE(p.files, '{}'::jsonb))
      ) k
      WHERE v."experimentId" = ${id} AND v.number BETWEEN ${lo} AND ${hi}
        AND (v.files -> k.path) IS DISTINCT FROM (p.files -> k.path)
      ORDER BY v.number, k.path`;
    for (const d of diffs) {
      const list = changes.get(d.number) ?? [];
      list.push({ path: d.path, change: d.change });
      changes.set(d.number, list);
    }
  }
  return {
    items: page.map((v) => ({
      id: v.id,
      number: v.number,
      createdAt: v.createdAt,
      author: v.createdBy ? { id: v.createdBy.id, name: authorName(v.createdBy)! } : null,
      restoredFrom: v.restoredFrom,
      runCount: v._count.runs,
      changes: changes.get(v.number) ?? [],
    })),
    nextBefore: rows.length > limit ? page[page.length - 1]!.number : null,
  };
}

/**
 * Restore: a new version with version `number`'s files, marked restoredFrom = number. Nothing is rewritten;
 * when the latest version already holds those files there is nothing to do (created: false). The same
 * stale-tab check as a save applies when the caller says which version it was looking at.
 */
export async function restoreVersion(
  db: Db,
  workspaceId: string,
  id: string,
  number: number,
  opts: { createdById: string | null; baseVersion?: number },
): Promise<SaveResult & { restoredFrom: number }> {
  await findExperiment(db, workspaceId, id);
  const old = await db.experimentVersion.findUnique({ where: { experimentId_number: { experimentId: id, number } }, select: { files: true } });
  if (!old) throw new AppError("NOT_FOUND", `number: experiment ${id} has no version ${number}`);
  const files = parseStoredFiles(old.files);
  const saved = await withNumberRetry(() =>
    db.$transaction((tx) => writeVersion(tx, id, files, { createdById: opts.createdById, baseVersion: opts.baseVersion, restoredFrom: number })),
  );
  return { ...saved, restoredFrom: number };
}
