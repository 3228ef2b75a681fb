/**
 * The run status machine, pure: which transition may move a run from which status, and what a batch of the
 * runner's events does to a run's status and attempt. The one writer (lifecycle.ts) applies these; nothing
 * else decides a run's status (features/run-lifecycle/server/lifecycle/status-writes.test.ts keeps it so).
 *
 *   queued ──start──▶ running ──finish──▶ completed | failed | stopped
 *     │                 │  ▲
 *     │               lose recover
 *     │                 ▼  │
 *     │                lost ──finish──▶ …
 *     └─ stop / fail (from any active status) ─▶ stopped / failed
 *   stopped | failed | lost ──resume (attempt + 1, maybe on another runner: move)──▶ running
 *
 * Attempts: a resume or a move starts attempt N+1, and the runner tags every event with its attempt. An
 * event of an older attempt is stored like any other (the log is the log) but never changes the status: a
 * late run.finished of a stopped attempt cannot end the attempt that was resumed after it.
 */
import { ACTIVE_RUN_STATUSES, eventAttempt, isTerminalStatus, type Diagnostic, type RunEvent, type RunStatus } from "@contracts";

export const TRANSITIONS = {
  /** A claimed run's runner accepted the start. */
  start: { from: ["queued"], to: "running" },
  /** Its runner stopped answering (visible, not final). */
  lose: { from: ["running"], to: "lost" },
  /** Its runner answers again and still has it. */
  recover: { from: ["lost"], to: "running" },
  /** A person pressed Stop (the runner stopped it, no longer had it, or did not answer). */
  stop: { from: ACTIVE_RUN_STATUSES, to: "stopped" },
  /** The web server gave up on it (no runner, the runner refused or lost it, its secrets are gone). */
  fail: { from: ACTIVE_RUN_STATUSES, to: "failed" },
  /** Continued from its newest checkpoint as a new attempt, on its own runner or another (a move). */
  resume: { from: ["stopped", "failed", "lost"], to: "running" },
} as const satisfies Record<string, { from: readonly RunStatus[]; to: RunStatus }>;

export type TransitionName = keyof typeof TRANSITIONS;

export function allowed(name: TransitionName, from: RunStatus): boolean {
  return (TRANSITIONS[name].from as readonly RunStatus[]).includes(from);
}

/** The status fields of a run as ingestion sees them. */
export interface RunStatusState {
  status: RunStatus;
  error: string | null;
  attempt: number;
  attemptOpen: boolean;
}

export interface StatusAfterEvents extends RunStatusState {
  diagnostics?: Diagnostic[];
  startedAt?: Date;
  finishedAt?: Date;
  /** Some field above differs from the state it started from. */
  changed: boolean;
}

/**
 * What a batch of fresh events (in seq order) does to the run's status: the run's "finish" transition when
 * its current attempt's run.finished arrives, "recover" when events arrive for a lost run, "start" when the
 * attempt's run.started arrives for a queued run. Events of an older attempt change nothing; events of a
 * newer one (the runner accepted a resume the database never recorded, e.g. the web process died between
 * the two) make that attempt the current one.
 */
export function statusAfterEvents(state: RunStatusState, events: readonly RunEvent[]): StatusAfterEvents {
  const out: StatusAfterEvents = { ...state, changed: false };
  for (const e of events) {
    const attempt = eventAttempt(e);
    if (attempt < out.attempt) continue;
    if (attempt > out.attempt) {
      out.attempt = attempt;
      out.attemptOpen = true;
      if (isTerminalStatus(out.status)) {
        out.status = "running";
        out.error = null;
        out.finishedAt = undefined;
      }
    }
    // Events arriving are the runner answering: a lost run is running again.
    if (out.status === "lost") out.status = "running";
    if (e.type === "run.started") {
      out.attemptOpen = true;
      if (out.status === "queued") out.status = "running";
      out.startedAt ??= new Date(e.ts);
    } else if (e.type === "run.finished") {
      out.attemptOpen = false;
      // A run the web server already ended (stopped while its runner was unreachable, failed) keeps that
      // first verdict; its runner's own end is still stored, and closes the attempt.
      if (!isTerminalStatus(out.status)) {
        out.status = e.payload.status;
        out.error = e.payload.error;
        if (e.payload.diagnostics.length > 0) out.diagnostics = e.payload.diagnostics;
        out.finishedAt = new Date(e.ts);
      }
    }
  }
  out.changed = out.status !== state.status || out.error !== state.error || out.attempt !== state.attempt || out.attemptOpen !== state.attemptOpen;
  return out;
}
