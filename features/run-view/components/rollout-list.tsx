"use client";
/**
 * The rollouts of a run as they finish, as a table (step, task, reply, reward, advantage, tokens, time,
 * error) with fixed-height rows, virtualised by @tanstack/react-virtual so only the rows in view are in the
 * DOM: 10,000 rollouts scroll as smoothly as 10.
 */
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useRef } from "react";
import { userFrames } from "@/components/code/stack-frames";
import { fmtMs, fmtNum, fmtSigned, truncate } from "@/components/ui/format";
import { fmtTokens } from "./rollout-figures";
import { SIGNALS, trainedAdvantageLabel } from "@contracts";
import { groupKey, rolloutAdvantage, type Rollout, type RolloutGroup } from "./run-state";

const ROW_HEIGHT = 40;
/** The table's columns, shared by the header and every row so they line up. */
const COLUMNS = "4.5rem minmax(4rem, 1fr) minmax(6rem, 2fr) 3.5rem 4rem 4.5rem 3.5rem minmax(4rem, 0.8fr)";

const PROMPT_FIELDS = ["prompt", "question", "input", "query", "instruction", "text", "task"];

/** A one-line preview of the task: its only string field or its prompt-like field, else compact JSON. */
export function taskPreview(task: unknown): string {
  if (task && typeof task === "object" && !Array.isArray(task)) {
    const entries = Object.entries(task as Record<string, unknown>).filter(([k]) => k !== "split");
    if (entries.length === 1 && typeof entries[0]![1] === "string") return entries[0]![1];
    const prompt = PROMPT_FIELDS.map((k) => (task as Record<string, unknown>)[k]).find((v): v is string => typeof v === "string" && v !== "");
    if (prompt) return truncate(prompt, 120);
    return truncate(JSON.stringify(Object.fromEntries(entries)), 60);
  }
  return truncate(JSON.stringify(task) ?? "", 60);
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
  onOpen,
  scaleRewards,
}: {
  r: Rollout;
  group: RolloutGroup | undefined;
  scaleRewards: boolean;
  selected: boolean;
  onSelect: (id: string) => void;
  onOpen: (id: string) => void;
}) {
  const adv = rolloutAdvantage(r.id, group, scaleRewards);
  return (
    <div
      role="row"
      data-testid="rollout"
      data-rollout-id={r.id}
      aria-selected={selected}
      onClick={() => onOpen(r.id)}
      onFocus={() => onSelect(r.id)}
      tabIndex={-1}
      style={{ height: ROW_HEIGHT, gridTemplateColumns: COLUMNS }}
      className={`grid w-full cursor-pointer items-center gap-2 border-b border-zinc-800/70 px-3 text-left text-[12px] outline-none ${
        selected ? "bg-amber-400/10 ring-1 ring-amber-400/40 ring-inset" : r.error ? "bg-red-950/15 hover:bg-zinc-900" : "hover:bg-zinc-900"
      }`}
    >
      <span role="cell" className="font-mono text-[11px] leading-tight text-zinc-500" title={`group ${r.group}, task ${r.task_index}`}>
        {r.split === "val" ? "eval " : ""}
        {r.step}
        <span className="text-zinc-600">
          {" "}
          · g{r.group}
          {group && group.rolloutIds.length > 1 ? `.${group.rolloutIds.indexOf(r.id) + 1}` : ""}
        </span>
      </span>
      <span role="cell" className="truncate text-zinc-400">
        {taskPreview(r.task)}
      </span>
      <span role="cell" className="truncate text-zinc-100">
        {truncate(r.reply.replace(/\s+/g, " "), 200) || <em className="text-zinc-600">(no reply)</em>}
      </span>
      <span role="cell" className="text-right">
        <RewardValue reward={r.reward} />
      </span>
      <span role="cell" className="text-right font-mono text-[11px] text-zinc-400 tabular-nums"
        title={adv.raw === null ? SIGNALS.advantage.label : `${SIGNALS.advantage.label} ${fmtSigned(adv.raw)} · ${trainedAdvantageLabel(scaleRewards)} ${fmtSigned(adv.trained)}`}
      >
        {adv.raw === null ? "" : fmtSigned(adv.raw)}
      </span>
      <span role="cell" className="text-right font-mono text-[11px] text-zinc-500 tabular-nums" title="prompt + completion tokens">
        {fmtTokens(r.tokens, "+")}
      </span>
      <span role="cell" className="text-right font-mono text-[11px] text-zinc-500 tabular-nums">
        {fmtMs(r.timings.duration_ms)}
      </span>
      <span role="cell" className="min-w-0">
        {r.error ? <ErrorBadge error={r.error} /> : null}
      </span>
    </div>
  );
}

const HEADERS: [string, string, string?][] = [
  ["Step", "step · group.member"],
  ["Task", "the task (its first field)"],
  ["Reply", "the last assistant reply"],
  ["Reward", "", "text-right"],
  ["Adv", SIGNALS.advantage.label, "text-right"],
  ["Tokens", "prompt + completion tokens", "text-right"],
  ["Time", "wall-clock duration", "text-right"],
  ["Error", "error kind and message"],
];

export function RolloutList({
  rollouts,
  groups,
  selectedId,
  onSelect,
  onOpen,
  follow,
  onUserScroll,
  scaleRewards = true,
}: {
  rollouts: readonly Rollout[];
  groups: Readonly<Record<string, RolloutGroup>>;
  /** The run's trainer.scale_rewards: which advantage the trainer used. */
  scaleRewards?: boolean;
  /** The row the keyboard is on (j/k); it is kept in view. */
  selectedId: string | null;
  onSelect: (id: string) => void;
  /** Open the row's transcript (click, Enter, o). */
  onOpen: (id: string) => void;
  /** Follow live: keep the newest rollout (index 0 when newest-first, else the last) in view. */
  follow?: "start" | "end" | null;
  /** The user scrolled the list themselves (wheel, touch, drag): following stops. */
  onUserScroll?: () => void;
}) {
  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: rollouts.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 10,
    getItemKey: (i) => rollouts[i]!.id,
  });

  // Keep the selected row in view when it moves (j/k, the group view, a link).
  const selectedIndex = selectedId ? rollouts.findIndex((r) => r.id === selectedId) : -1;
  useEffect(() => {
    if (selectedIndex >= 0) virtualizer.scrollToIndex(selectedIndex, { align: "auto" });
  }, [selectedIndex, virtualizer]);

  useEffect(() => {
    if (follow && rollouts.length > 0) virtualizer.scrollToIndex(follow === "start" ? 0 : rollouts.length - 1, { align: follow });
  }, [follow, rollouts.length, virtualizer]);

  return (
    <div className="flex min-h-0 flex-1 flex-col" role="table" aria-label="Rollouts" aria-rowcount={rollouts.length}>
      <div
        role="row"
        data-testid="rollout-list-header"
        style={{ gridTemplateColumns: COLUMNS }}
        className="grid shrink-0 gap-2 border-b border-zinc-800 bg-zinc-950 px-3 py-1 text-[10px] tracking-wide text-zinc-500 uppercase"
      >
        {HEADERS.map(([label, title, cls]) => (
          <span key={label} role="columnheader" title={title || undefined} className={cls}>
            {label}
          </span>
        ))}
      </div>
      <div
        ref={scrollRef}
        className="min-h-0 flex-1 overflow-auto"
        data-testid="rollout-list"
        onWheel={onUserScroll}
        onTouchMove={onUserScroll}
        onMouseDown={(e) => {
          // A press on the scrollbar (outside the rows) is the user scrolling.
          if (e.target === e.currentTarget) onUserScroll?.();
        }}
        // Virtualised, so the DOM holds only the visible rows: expose the true count.
        data-count={rollouts.length}
      >
        <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
          {virtualizer.getVirtualItems().map((item) => {
            const r = rollouts[item.index]!;
            return (
              <div key={item.key} style={{ position: "absolute", top: 0, left: 0, right: 0, transform: `translateY(${item.start}px)` }}>
                <RolloutRow r={r} group={groups[groupKey(r)]} scaleRewards={scaleRewards} selected={r.id === selectedId} onSelect={onSelect} onOpen={onOpen} />
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
