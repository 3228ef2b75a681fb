"use client";
/**
 * The run header's delivery indicator: live / delayed N s: database unreachable / reconnecting (what it
 * says is delivery-view.ts). It re-reads the stream's tracker once a second on its own, so the count moves
 * and silence is noticed without re-rendering the whole run page.
 */
import { useEffect, useState } from "react";
import type { RunStatus } from "@contracts";
import { deliveryView, type DeliveryTone, type DeliveryTracker } from "./delivery-view";
import type { StreamPhase } from "./use-run-stream";

const TEXT: Record<DeliveryTone, string> = {
  loading: "text-zinc-500",
  live: "text-emerald-400",
  synced: "text-emerald-400",
  delayed: "text-amber-300",
  reconnecting: "text-zinc-500",
  lost: "text-amber-300",
  idle: "text-zinc-400",
};
const DOT: Record<DeliveryTone, string> = {
  loading: "bg-zinc-500",
  live: "bg-emerald-400",
  synced: "bg-emerald-400",
  delayed: "bg-amber-400",
  reconnecting: "bg-red-400",
  lost: "bg-amber-400",
  idle: "bg-zinc-500",
};

export function DeliveryIndicator({ phase, status, delivery, kind, idle }: { phase: StreamPhase; status: RunStatus | null; delivery: DeliveryTracker; kind?: string; idle?: boolean }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(t);
  }, []);
  const view = deliveryView({ phase, status, tracker: delivery, now, kind, idle });
  return (
    <span data-testid="run-delivery" data-tone={view.tone} className={`flex items-center gap-1.5 text-[11px] ${TEXT[view.tone]}`} title="event delivery">
      <span aria-hidden className={`h-1.5 w-1.5 rounded-full ${DOT[view.tone]}`} />
      {view.label}
    </span>
  );
}
