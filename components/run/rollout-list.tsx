"use client";
/**
 * The rollouts of a run as they finish: fixed-height rows, windowed past VIRTUALIZE_AFTER rows so a run
 * with thousands of rollouts stays smooth (Langfuse virtualises past ~350).
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { userFrames } from "../editor/stack-frames";
import { fmtMs, fmtNum, fmtSigned, truncate } from "../ui/format";
import { advantage, groupKey, type Rollout, type RolloutGroup } from "./run-state";

const ROW_HEIGHT = 56;
const OVERSCAN = 8;
export const VIRTUALIZE_AFTER = 300;

/** A one-line preview of the task: its first string field, else compact JSON. */
export function taskPreview(task: unknown): string {
  if (task && typeof task === "object" && !Array.isArray(task)) {
    const entries = Object.entries(task as Record<string, unknown>).filter(([k]) => k !== "split");
    if (entries.length === 1 && typeof entries[0]![1] === "string") return entries[0]![1];
    return truncate(JSON.stringify(Object.fromEntries(entries)), 60);
  }
  return truncate(JSON.stringify(task) ?? "", 60);
}

/** The last assistant reply, the part of a rollout one most wants to see at a glance. */
export function lastReply(r: Rollout): string {
  for (let i = r.messages.length - 1; i >= 0; i--) {
    const m = r.messages[i]!;
    if (m.role === "assistant") {
      if (m.content) return m.content;
      if (m.tool_calls?.length) return `→ ${m.tool_calls.map((c) => c.function.name).join(", ")}`;
    }
  }
  return "";
}

export function RewardValue({ reward }: { reward: number | null }) {
  if (reward === null) return <span className="font-mono text-zinc-600">—</span>;
  const hue = reward >= 0.75 ? "text-emerald-300" : reward >= 0.25 ? "text-amber-200" : "text-zinc-300";
  return (
    <span data-testid="rollout-reward" className={`font-mono tabular-nums ${hue}`}>
      {fmtNum(reward)}
    </span>
  );
}

export function ErrorBadge({ error }: { error: NonNullable<Rollout["error"]> }) {
  // Where in the user's code it failed, if the stack reaches it: the first thing one asks of an error.
  const top = userFrames(error.stack)[0];
  return (
    <span
      data-testid="rollout-error"
      title={`${error.kind}: ${error.message}${top ? `\nat ${top.file}:${top.line}:${top.column}` : ""}`}
      className="inline-flex max-w-full min-w-0 items-center gap-1 self-start rounded bg-red-950 px-1.5 py-0.5 text-[11px] text-red-200 ring-1 ring-red-800 ring-inset"
    >
      <span className="font-mono font-semibold">{error.kind}</span>
      <span className="truncate">{error.message}</span>
    </span>
  );
}

function RolloutRow({
  r,
  group,
  selected,
  onSelect,
}: {
  r: Rollout;
  group: RolloutGroup | undefined;
  selected: boolean;
  onSelect: (id: string) => void;
}) {
  const adv = advantage(r.reward, group);
  return (
    <button
      type="button"
      data-testid="rollout"
      data-rollout-id={r.id}
      aria-pressed={selected}
      onClick={() => onSelect(r.id)}
      style={{ height: ROW_HEIGHT }}
      className={`flex w-full items-center gap-3 border-b border-zinc-800/70 px-3 text-left outline-none focus-visible:ring-2 focus-visible:ring-amber-400/60 focus-visible:ring-inset ${
        selected ? "bg-amber-400/10 ring-1 ring-amber-400/40 ring-inset" : r.error ? "bg-red-950/15 hover:bg-zinc-900" : "hover:bg-zinc-900"
      }`}
    >
      <div className="flex w-24 shrink-0 flex-col font-mono text-[11px] leading-tight text-zinc-500">
        <span>
          {r.split === "val" ? "eval " : ""}step {r.step}
        </span>
        <span>
          group {r.group}
          {group && group.rolloutIds.length > 1 ? ` · ${group.rolloutIds.indexOf(r.id) + 1}/${group.rolloutIds.length}` : ""}
        </span>
      </div>
      <div className="flex min-w-0 flex-1 flex-col gap-0.5">
        <span className="truncate text-[12px] text-zinc-400">{taskPreview(r.task)}</span>
        {r.error ? (
          <ErrorBadge error={r.error} />
        ) : (
          <span className="truncate text-zinc-100">{truncate(lastReply(r).replace(/\s+/g, " "), 200) || <em className="text-zinc-600">(no reply)</em>}</span>
        )}
      </div>
      <div className="flex w-20 shrink-0 flex-col items-end leading-tight">
        <RewardValue reward={r.reward} />
        <span className="font-mono text-[11px] text-zinc-500 tabular-nums" title="advantage: reward − group mean">
          {adv === null ? "" : fmtSigned(adv)}
        </span>
      </div>
      <span className="hidden w-14 shrink-0 text-right font-mono text-[11px] text-zinc-500 md:block">{fmtMs(r.timings.duration_ms)}</span>
    </button>
  );
}

export function RolloutList({
  rollouts,
  groups,
  selectedId,
  onSelect,
}: {
  rollouts: readonly Rollout[];
  groups: Readonly<Record<string, RolloutGroup>>;
  selectedId: string | null;
  onSelect: (id: string) => void;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewport, setViewport] = useState(800);
  const virtual = rollouts.length > VIRTUALIZE_AFTER;

  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setViewport(el.clientHeight));
    ro.observe(el);
    setViewport(el.clientHeight);
    return () => ro.disconnect();
  }, []);

  // Keep the selected row in view when it is chosen from elsewhere (the group view, j/k).
  useEffect(() => {
    const el = scrollRef.current;
    if (!el || !selectedId) return;
    const i = rollouts.findIndex((r) => r.id === selectedId);
    if (i < 0) return;
    const top = i * ROW_HEIGHT;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
  }, [selectedId, rollouts]);

  const [start, end] = useMemo(() => {
    if (!virtual) return [0, rollouts.length];
    const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(rollouts.length, Math.ceil((scrollTop + viewport) / ROW_HEIGHT) + OVERSCAN);
    return [first, last];
  }, [virtual, scrollTop, viewport, rollouts.length]);

  return (
    <div
      ref={scrollRef}
      onScroll={virtual ? (e) => setScrollTop(e.currentTarget.scrollTop) : undefined}
      className="min-h-0 flex-1 overflow-auto"
      data-testid="rollout-list"
      // The list is virtualised, so the DOM holds only the visible rows: expose the true count.
      data-count={rollouts.length}
    >
      <div style={virtual ? { height: rollouts.length * ROW_HEIGHT, position: "relative" } : undefined}>
        <div style={virtual ? { position: "absolute", top: start * ROW_HEIGHT, left: 0, right: 0 } : undefined}>
          {rollouts.slice(start, end).map((r) => (
            <RolloutRow key={r.id} r={r} group={groups[groupKey(r)]} selected={r.id === selectedId} onSelect={onSelect} />
          ))}
        </div>
      </div>
    </div>
  );
}
