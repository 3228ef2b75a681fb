/**
 * What the run page's "live" indicator says: whether events can reach this page now, not only whether its
 * socket is connected (issue 17 finding 5: through database outages it said "live" while nothing flowed).
 *
 * Two signs, either enough: the server's own word (`run:delivery`: "delayed: database unreachable", from
 * server/realtime/delivery-health.ts), and silence — the server sends that message to every subscribed page
 * every 2 s, so a page that has heard nothing at all (no event, no heartbeat, no status) for SILENT_AFTER_MS
 * while its run is active is delayed too, even when the server could not say so (its link to this page, or
 * the adapter between web processes, is what broke). Pure: the caller supplies the clock.
 */
import type { RunStatus } from "@contracts";
import type { RunDeliveryMessage } from "@/contracts/socket-events";
import { isTerminal } from "./status-fold";

/** Heartbeats come every 2 s: this much silence means nothing is getting through. */
export const SILENT_AFTER_MS = 10_000;

export type DeliveryTone = "loading" | "live" | "synced" | "delayed" | "reconnecting" | "lost" | "idle";

export interface DeliveryView {
  tone: DeliveryTone;
  label: string;
}

/** The page's memory of what it heard: when last anything, and the server's latest delivery message. */
export class DeliveryTracker {
  lastHeardAt: number;
  report: { msg: RunDeliveryMessage; receivedAt: number } | null = null;

  constructor(now: number) {
    this.lastHeardAt = now;
  }

  heard(now: number): void {
    this.lastHeardAt = now;
  }

  reported(msg: RunDeliveryMessage, now: number): void {
    this.report = { msg, receivedAt: now };
    this.lastHeardAt = now;
  }
}

export interface DeliveryInput {
  phase: "loading" | "live" | "offline";
  status: RunStatus | null;
  tracker: Pick<DeliveryTracker, "lastHeardAt" | "report">;
  now: number;
  /** The run's kind: an ART run has no runner, its client sends its events. */
  kind?: string;
  /** An ART run whose client went quiet (features/art/art-idle.ts): connected, but nothing is coming. */
  idle?: boolean;
}

const seconds = (ms: number) => Math.max(0, Math.round(ms / 1000));

export function deliveryView({ phase, status, tracker, now, kind, idle }: DeliveryInput): DeliveryView {
  if (phase === "loading") return { tone: "loading", label: "loading…" };
  if (phase === "offline") return { tone: "reconnecting", label: "reconnecting…" };
  const report = tracker.report;
  if (report && report.msg.state === "delayed") {
    const ms = report.msg.delayedMs + (now - report.receivedAt);
    return { tone: "delayed", label: `delayed ${seconds(ms)} s: ${report.msg.reason ?? "events are not getting through"}` };
  }
  const active = status !== null && !isTerminal(status);
  const silent = now - tracker.lastHeardAt;
  if (active && silent > SILENT_AFTER_MS) return { tone: "delayed", label: `delayed ${seconds(silent)} s: no word from the server` };
  if (active && idle) return { tone: "idle", label: "waiting for the ART client" };
  if (status === "lost") return { tone: "lost", label: kind === "art" ? "no word from the ART client" : kind === "tinker" ? "no word from the Tinker client" : "no events from the runner" };
  return active ? { tone: "live", label: "live" } : { tone: "synced", label: "synced" };
}
