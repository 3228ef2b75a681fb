/**
 * A run's status as a page shows it, folded from two sources keyed by attempt: the run's own event log
 * (each event carries the attempt that logged it) and the server's snapshots (runs.get, socket `run:status`,
 * each with the run's attempt and stored last seq).
 *
 * Why by attempt: a stopped or failed run can be resumed (by this page, another tab, another user), which
 * starts attempt N+1 (features/run-lifecycle/server/lifecycle). Within one attempt a status only moves forward
 * (queued → running ⇄ lost → terminal); a newer attempt starts over, so "failed" can become "running" again.
 * An older attempt's event (its late run.finished, logged after a stop the runner heard late) or an older
 * snapshot never overrides a newer attempt. Pure and, for events, order-independent.
 */
import { eventAttempt, type RunEventOf, type RunStatus, type ServedRunEvent } from "@contracts";

export type RunFinished = RunEventOf<"run.finished">["payload"];

export interface ServerStatus {
  status: RunStatus;
  /** The run's attempt when the server read it; absent from older servers: the attempt the page knows. */
  attempt?: number;
  /** The run's stored last seq when the server read it (orders snapshots of one attempt). */
  lastSeq?: number;
}

export interface StatusFold {
  /** The newest attempt known (0: nothing known yet). Everything below is about this attempt. */
  attempt: number;
  /** Seq of the attempt's newest run.started, and of its newest run.finished (0: none). */
  startedSeq: number;
  finishedSeq: number;
  finished: RunFinished | null;
  /** Some event of this attempt was seen (a rollout means it ran, even before its run.started arrives). */
  active: boolean;
  /** The server's newest snapshot of this attempt. */
  server: { status: RunStatus; lastSeq: number } | null;
}

export const initialStatusFold: StatusFold = { attempt: 0, startedSeq: 0, finishedSeq: 0, finished: null, active: false, server: null };

/** `running` and `lost` share a rank: the server moves a run between them both ways. */
const RANK: Record<RunStatus, number> = { queued: 0, running: 1, lost: 1, completed: 2, failed: 2, stopped: 2 };

export function isTerminal(status: RunStatus | null | undefined): boolean {
  return status === "completed" || status === "failed" || status === "stopped";
}

function fresh(attempt: number): StatusFold {
  return { ...initialStatusFold, attempt };
}

/** An event as the status fold reads it: a rollout.finished event's payload (whole or a summary) is not read. */
type StatusEvent = Exclude<ServedRunEvent, { type: "rollout.finished" }> | { type: "rollout.finished"; seq: number; attempt?: number };

/** Fold events (any order, duplicates already dropped by the caller). */
export function foldStatusEvents(fold: StatusFold, events: readonly StatusEvent[]): StatusFold {
  let f = fold;
  for (const e of events) {
    if (e.type !== "run.started" && e.type !== "run.finished" && e.type !== "rollout.finished") continue;
    const a = eventAttempt(e);
    if (a < f.attempt) continue; // an older attempt's event: stored and shown, never a status
    if (a > f.attempt) f = fresh(a);
    else if (f === fold) f = { ...f };
    if (e.type === "run.started") f.startedSeq = Math.max(f.startedSeq, e.seq);
    else if (e.type === "run.finished") {
      if (e.seq > f.finishedSeq) {
        f.finishedSeq = e.seq;
        f.finished = e.payload;
      }
    } else f.active = true;
  }
  return f;
}

/** Fold one server snapshot. */
export function foldServerStatus(fold: StatusFold, msg: ServerStatus): StatusFold {
  const attempt = msg.attempt ?? Math.max(fold.attempt, 1);
  const lastSeq = msg.lastSeq ?? 0;
  if (attempt < fold.attempt) return fold;
  if (attempt > fold.attempt) return { ...fresh(attempt), server: { status: msg.status, lastSeq } };
  const cur = fold.server;
  if (cur) {
    // Within one attempt: never backwards (a terminal status is final; a late "queued" is stale); between
    // running and lost, the snapshot that read at least as much of the log decides.
    if (RANK[msg.status] < RANK[cur.status]) return fold;
    if (RANK[msg.status] === RANK[cur.status] && (RANK[cur.status] === 2 || lastSeq < cur.lastSeq)) return fold;
    if (cur.status === msg.status && cur.lastSeq === lastSeq) return fold;
  }
  return { ...fold, server: { status: msg.status, lastSeq } };
}

/** The log's word on the attempt: its run.finished (unless a run.started follows it, an old resume), else running once anything ran. */
export function logStatus(f: StatusFold): RunStatus | null {
  if (f.finished && f.finishedSeq > f.startedSeq) return f.finished.status;
  return f.startedSeq > 0 || f.active ? "running" : null;
}

/** The attempt's run.finished when it is the final word (what the page shows as the run's error). */
export function finishedOf(f: StatusFold): RunFinished | null {
  return f.finished && f.finishedSeq > f.startedSeq ? f.finished : null;
}

/**
 * The status to show. The log's run.finished is the final word on how an attempt ended; a terminal
 * snapshot (stopped while the runner was unreachable: nothing logged yet) comes next; between running and
 * lost only the server knows (replayed stored events are no sign the runner answers again).
 */
export function shownStatus(f: StatusFold): RunStatus | null {
  const log = logStatus(f);
  const server = f.server?.status ?? null;
  if (isTerminal(log)) return log;
  if (server === null) return log;
  if (isTerminal(server) || log === null) return server;
  return RANK[server] === 1 ? server : log;
}
