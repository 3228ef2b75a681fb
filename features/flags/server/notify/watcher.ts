/**
 * The alerts watcher (one timer in the web process): flags running runs that sent no event for
 * STALL_AFTER_MS, raises the alert of runs that ended without passing through ingestion (runner lost,
 * failed start, stop), and sends due webhook deliveries.
 */
import { storeFlag } from "../detect/store";
import type { Db } from "@/server/db-types";
import { alertRunEnded } from "./alerts";
import { deliverDue } from "./delivery";

/** Ended runs this recent whose alert is missing get one (older ones predate the watcher: no flood on deploy). */
const ENDED_WITHIN_MS = 60 * 60_000;

/** Flags each running run whose last event (or start) is older than stallMs; once per run and step. */
export async function flagStalledRuns(db: Db, stallMs: number, now = new Date()): Promise<string[]> {
  const cutoff = new Date(now.getTime() - stallMs);
  const quiet = await db.run.findMany({
    where: {
      // A run whose runner is lost (run-lifecycle's liveness) is quiet too, and as worth an alert.
      status: { in: ["running", "lost"] },
      // An ART client (features/art) may train for long between its logs: its silence counts once the
      // liveness has called it lost (ART_CLIENT_SILENT_MS), not after STALL_AFTER_MS.
      NOT: { kind: { in: ["art", "tinker"] }, status: "running" },
      OR: [{ lastHeartbeatAt: { lt: cutoff } }, { lastHeartbeatAt: null, startedAt: { lt: cutoff } }],
    },
    select: { id: true, currentStep: true, lastHeartbeatAt: true, startedAt: true },
  });
  const flagged: string[] = [];
  for (const r of quiet) {
    const last = r.lastHeartbeatAt ?? r.startedAt!;
    const minutes = Math.round((now.getTime() - last.getTime()) / 60_000);
    const existing = await db.runFlag.findMany({ where: { runId: r.id, rule: "stalled" } });
    const stored = await storeFlag(
      db,
      r.id,
      {
        rule: "stalled",
        severity: "critical",
        message: `No event from the run for ${minutes} min (since ${last.toISOString()}), at step ${r.currentStep}.`,
        firstStep: r.currentStep,
        lastStep: r.currentStep,
        steps: [r.currentStep],
        rolloutIds: [],
      },
      existing,
    );
    if (stored) flagged.push(r.id);
  }
  return flagged;
}

export async function alertEndedRuns(db: Db, now = new Date()): Promise<number> {
  const missing = await db.$queryRaw<{ id: string }[]>`
    SELECT r."id" FROM "Run" r
    WHERE r."status" IN ('completed', 'failed', 'stopped') AND r."kind" <> 'dry_run' AND r."finishedAt" > ${new Date(now.getTime() - ENDED_WITHIN_MS)}
      AND NOT EXISTS (SELECT 1 FROM "Alert" a WHERE a."key" = r."id" || ':status')`;
  for (const r of missing) await alertRunEnded(db, r.id);
  return missing.length;
}

export class AlertsWatcher {
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly stallMs: number;

  constructor(
    private readonly db: Db,
    private readonly opts: { stallMs: number; intervalMs?: number; log?: (m: string) => void },
  ) {
    this.stallMs = opts.stallMs;
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs ?? 5_000);
    this.timer.unref();
  }

  async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      await flagStalledRuns(this.db, this.stallMs);
      await alertEndedRuns(this.db);
      await deliverDue(this.db);
    } catch (e) {
      (this.opts.log ?? console.warn)(`[alerts] ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.busy = false;
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
