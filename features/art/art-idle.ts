/**
 * An ART run whose client has gone quiet, as the run page and the runs table show it. A script that finished
 * without `backend.delete(model)` leaves its run "running" until ART_CLIENT_SILENT_MS (30 minutes) marks it
 * lost; a live "running" dot all that time says work is going on when none is. So the display says "idle
 * since <time>" once the client has been quiet for ART_CLIENT_IDLE_MS. Display only: the run's status is not
 * changed (the client may still call, and then it simply is not idle any more). Pure, browser-safe.
 */

/**
 * Quiet this long, the client is idle. Above the gaps a working client leaves: a sampling call writes its sign
 * of life at most once a minute (SAMPLING_SIGN_OF_LIFE_MS), a training job's web process every 10 s
 * (JOB_TOUCH_MS), each log and checkpoint call at once; and short enough that a finished script reads idle soon.
 */
export const ART_CLIENT_IDLE_MS = 2 * 60_000;

export interface IdleInput {
  kind: string;
  status: string | null;
  /** The run's last sign of life (Run.lastHeartbeatAt: art-api.ts clientCalled, sampling, ingestion). */
  lastHeartbeatAt: Date | string | null | undefined;
}

/** Since when a running ART run's client has been idle, or null (not ART, not running, or heard from lately). */
export function artIdleSince(run: IdleInput, now: number): Date | null {
  if (run.kind !== "art" || run.status !== "running" || !run.lastHeartbeatAt) return null;
  const at = new Date(run.lastHeartbeatAt);
  if (Number.isNaN(at.getTime())) return null;
  return now - at.getTime() >= ART_CLIENT_IDLE_MS ? at : null;
}

/** "idle since 14:03" today, "idle since Dec 2, 14:03" before (24-hour clock, the viewer's time zone). */
export function idleLabel(since: Date, now: number): string {
  const time = since.toLocaleTimeString("en-US", { hour: "2-digit", minute: "2-digit", hour12: false });
  const sameDay = new Date(now).toDateString() === since.toDateString();
  return `idle since ${sameDay ? time : `${since.toLocaleDateString("en-US", { month: "short", day: "numeric" })}, ${time}`}`;
}

/** The badge's tooltip: what idle means and when the run would be marked lost. */
export function idleTitle(since: Date): string {
  return `The ART client has sent nothing since ${since.toLocaleString("en-US", { hour12: false })}: its script may have ended without backend.delete(model). The run stays running (its next call continues it) and is marked lost after ART_CLIENT_SILENT_MS.`;
}

/** What StatusBadge shows for an idle ART run (its `idle` prop), or null when it is not idle. */
export function artIdleBadge(run: IdleInput, now: number): { label: string; title: string } | null {
  const since = artIdleSince(run, now);
  return since ? { label: idleLabel(since, now), title: idleTitle(since) } : null;
}
