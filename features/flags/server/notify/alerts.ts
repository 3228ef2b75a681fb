/**
 * Workspace alerts: a run finished, failed, was stopped or stalled, or a pathology flag was raised. Each
 * is one Alert row (its unique key makes raising it twice a no-op) shown in the app's bell, and, when
 * the workspace has a webhook, one WebhookDelivery queued in the same transaction (delivery.ts sends it).
 */
import type { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import type { Db, DbOrTx } from "@/server/db-types";

export const ALERT_KINDS = ["run.completed", "run.failed", "run.stopped", "run.stalled", "run.flag"] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export interface NewAlert {
  workspaceId: string;
  runId: string | null;
  kind: AlertKind;
  /** Unique across all alerts: e.g. `<runId>:status`, `<runId>:flag:<rule>:<firstStep>`. */
  key: string;
  severity: "info" | "warning" | "critical";
  title: string;
  message: string;
  data: Record<string, unknown>;
}

/** What a webhook receives (Standard Webhooks' { type, timestamp, data } envelope). */
export function webhookBody(alert: { id: string; kind: string; severity: string; title: string; message: string; runId: string | null; data: unknown; createdAt: Date }, workspaceId: string): string {
  return JSON.stringify({
    type: alert.kind,
    timestamp: alert.createdAt.toISOString(),
    data: { alertId: alert.id, workspaceId, runId: alert.runId, severity: alert.severity, title: alert.title, message: alert.message, ...(alert.data as object) },
  });
}

/** Stores the alert unless its key exists; queues its webhook delivery. Returns it when it is new. */
export async function raiseAlert(db: Db, a: NewAlert) {
  return db.$transaction(async (tx) => {
    const [alert] = await tx.alert.createManyAndReturn({
      data: [{ ...a, data: a.data as Prisma.InputJsonValue }],
      skipDuplicates: true,
    });
    if (!alert) return null;
    const hook = await tx.webhookEndpoint.findUnique({ where: { workspaceId: a.workspaceId }, select: { url: true } });
    if (hook) {
      await tx.webhookDelivery.create({ data: { workspaceId: a.workspaceId, alertId: alert.id, url: hook.url, body: webhookBody(alert, a.workspaceId) } });
    }
    return alert;
  });
}

const TERMINAL_KINDS = { completed: "run.completed", failed: "run.failed", stopped: "run.stopped" } as const;

/**
 * "say-the-word: stopped after step 2 of 12.": the last step that finished, the number the run page's Steps
 * shows (2 / 12). Not Run.currentStep: that is the step whose rollouts had started, one more for a run
 * stopped mid-step ("stopped at step 3" for a run at 2/12, issue 31). An eval run has no steps; an ART
 * run's client decides how many there are (no "of N").
 */
export function runEndedMessage(run: { experimentName: string; verb: string; kind: string; lastFinishedStep: number; numSteps: number | null }): string {
  if (run.kind === "eval") return `${run.experimentName}: ${run.verb}.`;
  const of = run.numSteps ? ` of ${run.numSteps}` : "";
  if (run.lastFinishedStep === 0) return `${run.experimentName}: ${run.verb} before step 1${of} finished.`;
  return `${run.experimentName}: ${run.verb} after step ${run.lastFinishedStep}${of}.`;
}

/**
 * The alert for a run that ended (once per run). Dry runs are previews the author is watching: no alert.
 * Called after ingestion changes a status, and by the watcher for runs ended elsewhere (runner lost, stop).
 */
export async function alertRunEnded(db: Db, runId: string) {
  const run = await db.run.findUnique({
    where: { id: runId },
    select: { id: true, number: true, workspaceId: true, status: true, kind: true, error: true, config: true, experiment: { select: { name: true } } },
  });
  if (!run || run.kind === "dry_run" || !(run.status in TERMINAL_KINDS)) return null;
  const kind = TERMINAL_KINDS[run.status as keyof typeof TERMINAL_KINDS];
  const verb = run.status === "completed" ? "finished" : run.status;
  const lastStep = await db.step.aggregate({ where: { runId }, _max: { step: true } });
  const numSteps = (run.config as { num_steps?: unknown } | null)?.num_steps;
  return raiseAlert(db, {
    workspaceId: run.workspaceId,
    runId: run.id,
    kind,
    key: `${run.id}:status`,
    severity: run.status === "failed" ? "critical" : "info",
    title: `Run #${run.number} ${verb}`,
    message:
      run.status === "failed"
        ? (run.error ?? "the run failed")
        : runEndedMessage({
            experimentName: run.experiment.name,
            verb,
            kind: run.kind,
            lastFinishedStep: lastStep._max.step ?? 0,
            numSteps: run.kind === "train" && typeof numSteps === "number" ? numSteps : null,
          }),
    data: { runNumber: run.number, status: run.status },
  });
}

/** The workspace's newest alerts and how many this member has not seen. */
export async function listAlerts(db: DbOrTx, workspaceId: string, userId: string, limit = 50) {
  const member = await db.membership.findUnique({ where: { workspaceId_userId: { workspaceId, userId } }, select: { alertsSeenAt: true } });
  const seen = member?.alertsSeenAt ?? new Date(0);
  const [items, unread] = await Promise.all([
    db.alert.findMany({
      where: { workspaceId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: limit,
      select: { id: true, kind: true, severity: true, title: true, message: true, runId: true, data: true, createdAt: true },
    }),
    db.alert.count({ where: { workspaceId, createdAt: { gt: seen } } }),
  ]);
  return { items: items.map((a) => ({ ...a, unread: a.createdAt > seen })), unread };
}

export async function markAlertsRead(db: DbOrTx, workspaceId: string, userId: string) {
  const res = await db.membership.updateMany({ where: { workspaceId, userId }, data: { alertsSeenAt: new Date() } });
  if (res.count === 0) throw new AppError("NOT_FOUND", "not a member of this workspace");
  return { ok: true as const };
}
