/**
 * The one owner of a run's life: every write of a run's status (and of its attempt, and of the claim that
 * gives a queued run to a runner) goes through here, as one conditional update whose WHERE is the
 * transition's allowed "from" statuses (transitions.ts), and every change is announced once — to the run's
 * socket room, and to the dispatcher when a slot may be free. Callers: features/runs (create, stop, fail),
 * dispatcher.ts (claim, start, fail), run-resume.ts (resume, move), ingest/projection.ts (what the runner's
 * events do), liveness/ (lost and recovered runs). A test (status-writes.test.ts) fails if a status is
 * written anywhere else.
 *
 * Conditional updates rather than a lock: each transition is one row update that either happens or finds
 * the run already elsewhere, so any number of web processes can race for it and exactly one wins.
 */
import { isTerminalStatus, type Diagnostic, type RunEvent, type RunStatus } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { kickDispatch } from "../dispatch-kick";
import { releaseDeferredDeletes } from "@/features/checkpoints/server";
import { emitRunStatus } from "@/server/run-hooks";
import type { Db, DbOrTx } from "@/server/db-types";
import { statusAfterEvents, TRANSITIONS, type RunStatusState, type StatusAfterEvents, type TransitionName } from "./transitions";

/** A status change to announce (after its transaction committed). */
export interface StatusChange {
  runId: string;
  status: RunStatus;
  error: string | null;
  lastSeq: number;
  attempt: number;
  lostSince?: number;
}

/** Tell the run's page, and the dispatcher when the run's runner may have a free slot. Once per change. */
export function announce(db: Db, change: StatusChange): void {
  emitRunStatus({
    runId: change.runId,
    status: change.status,
    error: change.error,
    lastSeq: change.lastSeq,
    attempt: change.attempt,
    ...(change.lostSince !== undefined ? { lostSince: change.lostSince } : {}),
  });
  if (isTerminalStatus(change.status)) {
    kickDispatch(db);
    // A checkpoint whose deletion waited for this run (an eval of it, a fork from it) may go now.
    void releaseDeferredDeletes(db).catch((e: unknown) => process.stderr.write(`deferred checkpoint deletions: ${e instanceof Error ? e.message : String(e)}\n`));
  }
}

async function announceRow(db: Db, runId: string): Promise<void> {
  const row = await db.run.findUnique({ where: { id: runId }, select: { status: true, error: true, lastSeq: true, attempt: true, lostSince: true } });
  if (!row) return;
  announce(db, { runId, status: row.status, error: row.error, lastSeq: row.lastSeq, attempt: row.attempt, ...(row.lostSince ? { lostSince: row.lostSince.getTime() } : {}) });
}

/** One transition as one conditional update; true when this call made it (and announced it). */
async function transition(db: Db, runId: string, name: TransitionName, where: Prisma.RunWhereInput, data: Omit<Prisma.RunUpdateManyMutationInput, "status">): Promise<boolean> {
  const { from, to } = TRANSITIONS[name];
  const res = await db.run.updateMany({ where: { id: runId, status: { in: [...from] }, ...where }, data: { ...data, status: to } });
  if (res.count === 0) return false;
  await announceRow(db, runId);
  return true;
}

// --- queue and claim ------------------------------------------------------------------------------------

/**
 * A new run's row, `queued` (accepted: the dispatcher gives it to a runner) or `failed` (its start never
 * reached one; the reason kept). The caller announces a queued run once its transaction committed.
 */
export async function createRunRecord(
  tx: DbOrTx,
  data: Omit<Prisma.RunUncheckedCreateInput, "status" | "error" | "finishedAt" | "attempt" | "attemptOpen">,
  initial: { status: "queued" } | { status: "failed"; error: string } | { status: "running"; noRunner: "art" | "tinker" },
): Promise<void> {
  const now = new Date();
  await tx.run.create({
    data: {
      ...data,
      status: initial.status,
      error: initial.status === "failed" ? initial.error : null,
      finishedAt: initial.status === "failed" ? now : null,
      // An ART run (features/art) runs from its creation, with no runner: its client logs its steps, and its
      // silence is the supervisor's artClientsSilent. The caller announces it once its transaction committed.
      ...(initial.status === "running" ? { startedAt: now, lastHeartbeatAt: now } : {}),
    },
  });
}

/** A run was queued: its page, and the dispatcher (a runner may have room for it now). */
export function announceQueued(db: Db, runId: string): void {
  announce(db, { runId, status: "queued", error: null, lastSeq: 0, attempt: 1 });
  kickDispatch(db);
}

/** The dispatcher gives a queued run to a runner (still `queued`: "being started there"). */
export async function claimRun(tx: DbOrTx, runId: string, runnerId: string, now: Date): Promise<void> {
  await tx.run.update({ where: { id: runId }, data: { runnerId, lastHeartbeatAt: now } });
}

/** The claimed runner did not answer: the run waits in the queue again. */
export async function unclaimRun(db: DbOrTx, runId: string, runnerId: string): Promise<void> {
  await db.run.updateMany({ where: { id: runId, status: "queued", runnerId }, data: { runnerId: null } });
}

// --- the web server's own transitions ---------------------------------------------------------------------

/** queued → running: the claimed runner accepted the start (attempt 1, or the attempt it was sent). */
export async function startRun(db: Db, runId: string, runnerId: string): Promise<boolean> {
  const now = new Date();
  if (await transition(db, runId, "start", { runnerId }, { startedAt: now, lastHeartbeatAt: now, attemptOpen: true })) return true;
  // Ingestion may have stored the runner's run.started first (and, for a quick run, its end too): the run
  // started all the same. Only a run stopped while the runner was starting it has no start recorded.
  const row = await db.run.findUnique({ where: { id: runId }, select: { runnerId: true, startedAt: true } });
  return row?.runnerId === runnerId && row.startedAt !== null;
}

/**
 * running → lost: its runner (or, for an ART run, its client) has not answered since `since`. `note` says
 * why where "runner lost" would mislead (an ART run has no runner); recoverRun clears it.
 */
export function loseRun(db: Db, runId: string, since: Date, opts: { note?: string } = {}): Promise<boolean> {
  return transition(db, runId, "lose", {}, { lostSince: since, ...(opts.note ? { error: opts.note } : {}) });
}

/** lost → running: its runner answers again and still has it (or its ART client called again). */
export function recoverRun(db: Db, runId: string): Promise<boolean> {
  // A running run has no error: a lost one's note (loseRun) goes with the lost status.
  return transition(db, runId, "recover", {}, { lostSince: null, error: null, lastHeartbeatAt: new Date() });
}

/**
 * Any active status → stopped. `note` says why when it is not the runner's own stop (stopped while it was
 * unreachable; the runner no longer had it). The attempt stays open while the runner may still be running
 * it (`runnerMayRun`): ingestion keeps storing what it logs until its run.finished.
 */
export function stopRun(db: Db, runId: string, opts: { note?: string | null; runnerMayRun: boolean }): Promise<boolean> {
  return transition(db, runId, "stop", {}, {
    finishedAt: new Date(),
    lostSince: null,
    ...(opts.note ? { error: opts.note } : {}),
    ...(opts.runnerMayRun ? {} : { attemptOpen: false }),
  });
}

/**
 * Any active status → failed, with the reason (and the diagnostics of a refused start). `runnerMayRun`:
 * whether the runner may still be writing the attempt (false when it never had it or no longer knows it).
 */
export function failRun(db: Db, runId: string, error: string, opts: { diagnostics?: Diagnostic[]; runnerMayRun?: boolean } = {}): Promise<boolean> {
  return transition(db, runId, "fail", {}, {
    error,
    finishedAt: new Date(),
    lostSince: null,
    ...(opts.diagnostics && opts.diagnostics.length > 0 ? { diagnostics: opts.diagnostics as Prisma.InputJsonValue } : {}),
    ...(opts.runnerMayRun ? {} : { attemptOpen: false }),
  });
}

/**
 * stopped | failed | lost → running as attempt `attempt` (= the run's attempt + 1), which `runnerId` has
 * accepted; `movedFrom`: the runner it left (a move), told to stop its old copy if it comes back. Refused
 * (false) when the run changed meanwhile (resumed or stopped elsewhere). Ingestion may have stored the new
 * attempt's first events first (same runner): that counts as this resume having happened.
 */
export async function resumeRun(
  db: Db,
  run: { id: string; runnerId: string; attempt: number },
  next: { attempt: number; runnerId: string; movedFrom: string | null },
): Promise<boolean> {
  const { from, to } = TRANSITIONS.resume;
  const data = {
    status: to,
    attempt: next.attempt,
    attemptOpen: true,
    error: null,
    finishedAt: null,
    lostSince: null,
    lastHeartbeatAt: new Date(),
    ...(next.movedFrom ? { runnerId: next.runnerId, movedFromRunnerId: next.movedFrom } : {}),
  };
  const res = await db.run.updateMany({
    where: {
      id: run.id,
      OR: [
        // Still where it was read: on its runner, at its attempt, resumable.
        { status: { in: [...from] }, runnerId: run.runnerId, attempt: run.attempt },
        // Ingestion already stored the new attempt's run.started from the same runner.
        ...(next.movedFrom ? [] : [{ attempt: next.attempt, runnerId: next.runnerId, status: "running" as const }]),
      ],
    },
    data,
  });
  if (res.count === 0) return false;
  await announceRow(db, run.id);
  return true;
}

/** The runner will append nothing more for this attempt (it never had it, no longer knows it, or a day passed). */
export async function closeAttempt(db: DbOrTx, runId: string, attempt: number): Promise<void> {
  await db.run.updateMany({ where: { id: runId, attempt, attemptOpen: true }, data: { attemptOpen: false } });
}

/** The runner answered about an active run: it is alive (a heartbeat, not a status change). */
export async function recordSignOfLife(db: DbOrTx, runId: string, status: RunStatus): Promise<void> {
  await db.run.updateMany({ where: { id: runId, status }, data: { lastHeartbeatAt: new Date() } });
}

// --- the runner's events ---------------------------------------------------------------------------------

/**
 * Inside ingestion's transaction (the run row locked): what a batch of fresh events does to the run's status
 * (transitions.ts statusAfterEvents), written here when it changed. Returns it, for the caller to announce
 * after the commit (a change announced before its commit could be seen and then rolled back).
 */
export async function applyRunnerEvents(tx: Prisma.TransactionClient, runId: string, state: RunStatusState & { startedAt: Date | null }, events: readonly RunEvent[]): Promise<StatusAfterEvents> {
  const next = statusAfterEvents(state, events);
  if (next.changed || (next.startedAt && !state.startedAt)) {
    await tx.run.update({
      where: { id: runId },
      data: {
        status: next.status,
        error: next.error,
        attempt: next.attempt,
        attemptOpen: next.attemptOpen,
        ...(state.status === "lost" && next.status !== "lost" ? { lostSince: null } : {}),
        ...(next.startedAt && !state.startedAt ? { startedAt: next.startedAt } : {}),
        ...(next.finishedAt ? { finishedAt: next.finishedAt } : {}),
        ...(next.diagnostics !== undefined ? { diagnostics: next.diagnostics as Prisma.InputJsonValue } : {}),
      },
    });
  }
  return next;
}
