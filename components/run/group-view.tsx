"use client";
/**
 * The GRPO group view: the rollouts of one task sampled together at one step, side by side, with their
 * rewards and advantages (reward − group mean; the normalised one divides by the group std as GRPO does).
 * A group with no reward variance trains nothing; it is marked so.
 */
import { useMemo, useState } from "react";
import { fmtNum, fmtSigned, truncate } from "../ui/format";
import { EmptyState } from "../ui/primitives";
import { ErrorBadge, RewardValue, lastReply, taskPreview } from "./rollout-list";
import { advantage, type Rollout, type RolloutGroup } from "./run-state";

const MAX_GROUPS_SHOWN = 200;

function AdvantageBar({ adv, scale }: { adv: number | null; scale: number }) {
  if (adv === null) return <div className="h-1.5" />;
  const pct = scale > 0 ? Math.min(50, (Math.abs(adv) / scale) * 50) : 0;
  return (
    <div className="relative h-1.5 rounded bg-zinc-800" aria-hidden>
      <div className="absolute top-0 bottom-0 left-1/2 w-px bg-zinc-600" />
      <div
        className={`absolute top-0 bottom-0 rounded ${adv >= 0 ? "bg-emerald-400" : "bg-red-400"}`}
        style={adv >= 0 ? { left: "50%", width: `${pct}%` } : { right: "50%", width: `${pct}%` }}
      />
    </div>
  );
}

function GroupCard({
  group,
  rollouts,
  selectedId,
  onSelect,
}: {
  group: RolloutGroup;
  rollouts: Rollout[];
  selectedId: string | null;
  onSelect: (id: string) => void;
}) {
  const advs = rollouts.map((r) => advantage(r.reward, group));
  const scale = Math.max(1e-9, ...advs.map((a) => Math.abs(a ?? 0)));
  const flat = group.rewardStd !== null && group.rewardStd < 1e-9 && rollouts.length > 1;
  const first = rollouts[0];
  return (
    <div data-testid="group" className="rounded border border-zinc-800 bg-zinc-900/40">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-1 border-b border-zinc-800 px-3 py-1.5">
        <span className="font-mono text-[12px] text-zinc-400">
          {group.split === "val" ? "eval · " : ""}step {group.step} · group {group.group}
        </span>
        <span className="min-w-0 truncate text-zinc-200">{first ? taskPreview(first.task) : `task ${group.taskIndex}`}</span>
        <span className="ml-auto font-mono text-[12px] text-zinc-400 tabular-nums">
          mean <span className="text-zinc-100">{fmtNum(group.rewardMean)}</span> ± {fmtNum(group.rewardStd)}
        </span>
        {flat && (
          <span className="rounded bg-zinc-800 px-1.5 py-0.5 text-[11px] text-zinc-400" title="All rewards equal: zero advantage, nothing to learn">
            no variance
          </span>
        )}
        {group.errorCount > 0 && <span className="text-[11px] text-red-300">{group.errorCount} failed</span>}
      </div>
      <div className="grid gap-2 p-2" style={{ gridTemplateColumns: `repeat(${Math.min(Math.max(rollouts.length, 1), 8)}, minmax(0, 1fr))` }}>
        {rollouts.map((r, i) => {
          const adv = advs[i] ?? null;
          const norm = adv !== null && group.rewardStd !== null ? adv / (group.rewardStd + 1e-6) : null;
          return (
            <button
              key={r.id}
              type="button"
              data-testid="group-rollout"
              onClick={() => onSelect(r.id)}
              className={`flex min-w-0 flex-col gap-1.5 rounded border p-2 text-left ${
                r.id === selectedId ? "border-amber-400/60 bg-amber-400/10" : "border-zinc-800 bg-zinc-950/60 hover:border-zinc-600"
              }`}
            >
              <div className="flex items-baseline justify-between gap-2">
                <span className="text-[11px] text-zinc-500">#{i + 1}</span>
                <span className="text-[15px]">
                  <RewardValue reward={r.reward} />
                </span>
              </div>
              <AdvantageBar adv={adv} scale={scale} />
              <div className="flex justify-between font-mono text-[11px] text-zinc-400 tabular-nums">
                <span title="advantage: reward − group mean">A {fmtSigned(adv)}</span>
                <span title="advantage ÷ (group std + 1e-6), as GRPO scales it">{norm === null ? "" : `z ${fmtSigned(norm, 2)}`}</span>
              </div>
              {r.error ? (
                <ErrorBadge error={r.error} />
              ) : (
                <p className="line-clamp-4 text-[12px] break-words whitespace-pre-wrap text-zinc-200">{truncate(lastReply(r), 400) || "(no reply)"}</p>
              )}
            </button>
          );
        })}
      </div>
    </div>
  );
}

export function GroupView({
  groups,
  rollouts,
  selectedId,
  onSelect,
}: {
  groups: readonly RolloutGroup[];
  rollouts: readonly Rollout[];
  selectedId: string | null;
  onSelect: (id: string) => void;
}) {
  const byId = useMemo(() => new Map(rollouts.map((r) => [r.id, r])), [rollouts]);
  const steps = useMemo(() => [...new Set(groups.map((g) => `${g.split}:${g.step}`))], [groups]);
  const [stepFilter, setStepFilter] = useState<string>("latest");
  // "latest" means the newest training step: that is where GRPO's groups matter (eval groups come last).
  const trainSteps = steps.filter((s) => s.startsWith("train:"));
  const latest = trainSteps[trainSteps.length - 1] ?? steps[steps.length - 1];
  const chosen = stepFilter === "latest" ? latest : stepFilter;
  const shown = groups.filter((g) => stepFilter === "all" || `${g.split}:${g.step}` === chosen).slice(-MAX_GROUPS_SHOWN);

  if (groups.length === 0) {
    return (
      <div className="p-4">
        <EmptyState title="No groups yet">Each task is sampled several times per step; its rollouts appear here side by side as they finish.</EmptyState>
      </div>
    );
  }
  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <div className="flex shrink-0 items-center gap-2 border-b border-zinc-800 px-3 py-1.5 text-[12px]">
        <label htmlFor="group-step" className="text-zinc-500">
          Step
        </label>
        <select
          id="group-step"
          value={stepFilter}
          onChange={(e) => setStepFilter(e.target.value)}
          className="rounded border border-zinc-700 bg-zinc-900 px-1.5 py-0.5 text-zinc-200"
        >
          <option value="latest">latest</option>
          <option value="all">all</option>
          {steps.map((s) => {
            const [split, step] = s.split(":");
            return (
              <option key={s} value={s}>
                {split === "val" ? `eval @ ${step}` : `step ${step}`}
              </option>
            );
          })}
        </select>
        <span className="text-zinc-500">
          {shown.length} group{shown.length === 1 ? "" : "s"}
        </span>
      </div>
      <div className="min-h-0 flex-1 space-y-2 overflow-auto p-3">
        {shown.map((g) => (
          <GroupCard
            key={g.key}
            group={g}
            rollouts={g.rolloutIds.map((id) => byId.get(id)).filter((r): r is Rollout => r !== undefined)}
            selectedId={selectedId}
            onSelect={onSelect}
          />
        ))}
      </div>
    </div>
  );
}
