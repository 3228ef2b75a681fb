"use client";
/**
 * The GRPO group view: the rollouts of one task sampled together at one step, side by side, with their
 * rewards and both advantages (reward − group mean, and the one the trainer used: contracts/signals.ts),
 * a word diff of two of them, and a step slider that walks the same task across the run. A train group with
 * no reward variance has zero advantage everywhere, so it trained nothing; it is badged so.
 */
import { useMemo, useState } from "react";
import { fmtNum, fmtSigned, truncate } from "@/components/ui/format";
import { EmptyState } from "@/components/ui/primitives";
import { ErrorBadge, RewardValue, taskPreview } from "./rollout-list";
import { SIGNALS, trainedAdvantageLabel } from "@contracts";
import { rolloutAdvantage, type Rollout, type RolloutGroup } from "./run-state";
import { rolloutText, wordDiff } from "./text-diff";
import { useWholeRollouts } from "./whole-rollouts";
import { Spinner } from "@/components/ui/primitives";

const MAX_GROUPS_SHOWN = 200;

/**
 * The advantage a Tinker client trained a rollout with (its datum's `advantages`, linked by tokens:
 * features/tinker/server/tinker-record.ts): such a rollout's reward never reaches Rollbook, so the card shows
 * the client's own advantage instead of one derived from rewards.
 */
function clientAdvantage(r: Rollout): { raw: number | null; trained: number | null } | null {
  const a = r.metrics.advantage;
  return r.reward === null && !r.error && typeof a === "number" ? { raw: a, trained: a } : null;
}

/** A group whose rewards are all equal (and more than one): every advantage is 0, the step learns nothing from it. */
export function trainedNothing(g: RolloutGroup): boolean {
  return g.split === "train" && g.rolloutIds.length > 1 && g.rewardStd !== null && g.rewardStd < 1e-9;
}

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

function TrainedNothingBadge() {
  return (
    <span
      data-testid="trained-nothing"
      className="rounded bg-zinc-800 px-1.5 py-0.5 text-[11px] text-zinc-300 ring-1 ring-zinc-600 ring-inset"
      title="All rewards in the group are equal: every advantage is 0, so this group contributed no gradient"
    >
      trained nothing
    </span>
  );
}

function GroupCard({
  group,
  rollouts,
  selectedId,
  onSelect,
  pair,
  onPick,
  scaleRewards,
}: {
  group: RolloutGroup;
  scaleRewards: boolean;
  rollouts: Rollout[];
  selectedId: string | null;
  onSelect: (id: string) => void;
  /** The two rollouts being diffed (A, B), when this card offers the diff. */
  pair?: [string | null, string | null];
  onPick?: (slot: 0 | 1, id: string) => void;
}) {
  const advs = rollouts.map((r) => clientAdvantage(r) ?? rolloutAdvantage(r.id, group, scaleRewards));
  const scale = Math.max(1e-9, ...advs.map((a) => Math.abs(a.raw ?? 0)));
  const first = rollouts[0];
  return (
    <div data-testid="group" data-step={group.step} className="rounded border border-zinc-800 bg-zinc-900/40">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-1 border-b border-zinc-800 px-3 py-1.5">
        <span className="font-mono text-[12px] text-zinc-400">
          {group.split === "val" ? "eval · " : ""}step {group.step} · group {group.group} · task {group.taskIndex}
        </span>
        <span className="min-w-0 truncate text-zinc-200">{first ? taskPreview(first.task) : `task ${group.taskIndex}`}</span>
        <span className="ml-auto font-mono text-[12px] text-zinc-400 tabular-nums">
          mean <span className="text-zinc-100">{fmtNum(group.rewardMean)}</span> ± {fmtNum(group.rewardStd)}
        </span>
        {trainedNothing(group) && <TrainedNothingBadge />}
        {group.errorCount > 0 && <span className="text-[11px] text-red-300">{group.errorCount} failed</span>}
      </div>
      <div className="grid gap-2 p-2" style={{ gridTemplateColumns: "repeat(auto-fill, minmax(9.5rem, 1fr))" }}>
        {rollouts.map((r, i) => {
          const adv = advs[i]!;
          const slot = pair ? (pair[0] === r.id ? "A" : pair[1] === r.id ? "B" : null) : null;
          return (
            <div
              key={r.id}
              className={`flex min-w-0 flex-col gap-1.5 rounded border p-2 text-left ${
                r.id === selectedId ? "border-amber-400/60 bg-amber-400/10" : "border-zinc-800 bg-zinc-950/60 hover:border-zinc-600"
              }`}
            >
              <button type="button" data-testid="group-rollout" data-rollout-id={r.id} onClick={() => onSelect(r.id)} className="flex min-w-0 flex-col gap-1.5 text-left">
                <div className="flex items-baseline justify-between gap-2">
                  <span className="text-[11px] text-zinc-500">
                    #{i + 1}
                    {slot && <span className="ml-1 rounded bg-sky-900 px-1 font-mono text-sky-200">{slot}</span>}
                  </span>
                  <span className="text-[15px]">
                    <RewardValue reward={r.reward} />
                  </span>
                </div>
                <AdvantageBar adv={adv.raw} scale={scale} />
                <div className="flex w-full justify-between font-mono text-[11px] text-zinc-400 tabular-nums">
                  <span data-testid="group-adv" title={`${SIGNALS.advantage.label}: ${SIGNALS.advantage.definition}`}>
                    A {fmtSigned(adv.raw)}
                  </span>
                  <span data-testid="group-trained-adv" title={`${trainedAdvantageLabel(scaleRewards)}: ${SIGNALS.trainedAdvantage.definition}`}>
                    {adv.trained === null ? "" : `trained ${fmtSigned(adv.trained, 2)}`}
                  </span>
                </div>
                {r.error ? (
                  <ErrorBadge error={r.error} />
                ) : (
                  <p className="line-clamp-4 text-[12px] break-words whitespace-pre-wrap text-zinc-200">{truncate(r.reply, 400) || "(no reply)"}</p>
                )}
              </button>
              {onPick && (
                <div className="mt-auto flex gap-1 text-[11px]">
                  {(["A", "B"] as const).map((label, s) => (
                    <button
                      key={label}
                      type="button"
                      data-testid={`diff-pick-${label}`}
                      aria-pressed={slot === label}
                      onClick={() => onPick(s as 0 | 1, r.id)}
                      className={`rounded px-1.5 ring-1 ring-inset ${slot === label ? "bg-sky-900 text-sky-100 ring-sky-600" : "text-zinc-500 ring-zinc-700 hover:text-zinc-200"}`}
                    >
                      diff {label}
                    </button>
                  ))}
                </div>
              )}
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** A word diff of what two rollouts' models wrote: A's words struck out in red, B's in green (read whole first: whole-rollouts.ts). */
function DiffView({ runId, a, b, ia, ib }: { runId: string; a: Rollout; b: Rollout; ia: number; ib: number }) {
  const pair = useMemo(() => [a, b], [a, b]);
  const whole = useWholeRollouts(runId, pair);
  const [wa, wb] = whole.data ?? [];
  const diff = useMemo(() => (wa && wb ? wordDiff(rolloutText(wa), rolloutText(wb)) : null), [wa, wb]);
  return (
    <div data-testid="group-diff" className="rounded border border-zinc-800 bg-zinc-950/60">
      <div className="flex flex-wrap items-center gap-3 border-b border-zinc-800 px-3 py-1.5 text-[12px] text-zinc-400">
        <span>
          Diff <span className="font-mono text-sky-200">A</span> #{ia + 1} (reward {fmtNum(a.reward)}) → <span className="font-mono text-sky-200">B</span> #{ib + 1} (reward{" "}
          {fmtNum(b.reward)})
        </span>
        {diff?.ok && (
          <span className="font-mono text-[11px]">
            <span className="text-red-300">−{diff.removed}</span> <span className="text-emerald-300">+{diff.added}</span> words
          </span>
        )}
      </div>
      {a.id === b.id ? (
        <div className="p-3 text-[12px] text-zinc-500">Pick two different rollouts to diff.</div>
      ) : whole.error ? (
        <div className="p-3 text-[12px] text-red-300">Could not read the two rollouts: {whole.error}</div>
      ) : !diff ? (
        <div className="p-3">
          <Spinner label="Reading the two rollouts…" />
        </div>
      ) : !diff.ok ? (
        <div className="p-3 text-[12px] text-amber-300">No diff: {diff.reason}.</div>
      ) : (
        <pre className="max-h-96 overflow-auto p-3 font-sans text-[13px] leading-relaxed break-words whitespace-pre-wrap text-zinc-200">
          {diff.parts.map((p, i) =>
            p.kind === "same" ? (
              <span key={i}>{p.text}</span>
            ) : p.kind === "removed" ? (
              <del key={i} data-testid="diff-removed" className="bg-red-950/70 text-red-200 decoration-red-400/70">
                {p.text}
              </del>
            ) : (
              <ins key={i} data-testid="diff-added" className="bg-emerald-950/70 text-emerald-200 no-underline">
                {p.text}
              </ins>
            ),
          )}
        </pre>
      )}
    </div>
  );
}

interface TaskOption {
  key: string;
  split: "train" | "val";
  taskIndex: number;
  label: string;
  groups: number;
}

const taskKey = (split: string, taskIndex: number) => `${split}:${taskIndex}`;

/** One task across the run: its group at the chosen step, the diff, and a strip of every step it was sampled at. */
function TaskAcrossSteps({
  runId,
  groups,
  byId,
  step,
  onStep,
  selectedId,
  onSelect,
  scaleRewards,
}: {
  /** This task's groups, sorted by step then group. */
  runId: string;
  scaleRewards: boolean;
  groups: RolloutGroup[];
  byId: ReadonlyMap<string, Rollout>;
  step: number;
  onStep: (step: number) => void;
  selectedId: string | null;
  onSelect: (id: string) => void;
}) {
  const steps = [...new Set(groups.map((g) => g.step))];
  const at = steps.includes(step) ? step : steps[steps.length - 1]!;
  const here = groups.filter((g) => g.step === at);
  const [pairByGroup, setPairByGroup] = useState<Record<string, [string | null, string | null]>>({});
  return (
    <div className="space-y-2">
      <div className="flex flex-wrap gap-1" data-testid="task-steps" aria-label="This task at every step">
        {steps.map((s) => {
          const gs = groups.filter((g) => g.step === s);
          const mean = gs[0]?.rewardMean ?? null;
          const flat = gs.every(trainedNothing);
          return (
            <button
              key={s}
              type="button"
              onClick={() => onStep(s)}
              aria-pressed={s === at}
              title={`step ${s}: mean reward ${fmtNum(mean)}${flat ? " — trained nothing" : ""}`}
              className={`rounded px-1.5 py-0.5 font-mono text-[11px] tabular-nums ring-1 ring-inset ${
                s === at ? "bg-amber-400/15 text-amber-100 ring-amber-500/60" : flat ? "text-zinc-600 ring-zinc-800" : "text-zinc-300 ring-zinc-700 hover:ring-zinc-500"
              }`}
            >
              {s}: {fmtNum(mean, 2)}
            </button>
          );
        })}
      </div>
      {here.map((g) => {
        const rs = g.rolloutIds.map((id) => byId.get(id)).filter((r): r is Rollout => r !== undefined);
        // Default pair: the best and the worst reward, the most telling contrast in a group.
        const ranked = [...rs].sort((x, y) => (y.reward ?? -Infinity) - (x.reward ?? -Infinity));
        const chosen = pairByGroup[g.key] ?? [ranked[0]?.id ?? null, ranked[ranked.length - 1]?.id ?? null];
        const a = rs.find((r) => r.id === chosen[0]);
        const b = rs.find((r) => r.id === chosen[1]);
        return (
          <div key={g.key} className="space-y-2">
            <GroupCard
              group={g}
              rollouts={rs}
              selectedId={selectedId}
              onSelect={onSelect}
              scaleRewards={scaleRewards}
              pair={chosen}
              onPick={(slot, id) => setPairByGroup((p) => ({ ...p, [g.key]: slot === 0 ? [id, chosen[1]] : [chosen[0], id] }))}
            />
            {a && b && rs.length > 1 && <DiffView runId={runId} a={a} b={b} ia={rs.indexOf(a)} ib={rs.indexOf(b)} />}
          </div>
        );
      })}
    </div>
  );
}

export function GroupView({
  runId,
  groups,
  rollouts,
  selectedId,
  onSelect,
  initialStep = null,
  scaleRewards = true,
}: {
  runId: string;
  groups: readonly RolloutGroup[];
  /** The run's trainer.scale_rewards: which advantage the trainer used. */
  scaleRewards?: boolean;
  rollouts: readonly Rollout[];
  selectedId: string | null;
  onSelect: (id: string) => void;
  /** Start at this step (a `?step=` link). */
  initialStep?: number | null;
}) {
  const byId = useMemo(() => new Map(rollouts.map((r) => [r.id, r])), [rollouts]);
  const [split, setSplit] = useState<"train" | "val">(() => (groups.some((g) => g.split === "train") || !groups.length ? "train" : "val"));
  const inSplit = useMemo(() => groups.filter((g) => g.split === split), [groups, split]);
  const tasks = useMemo(() => {
    const out = new Map<string, TaskOption>();
    for (const g of inSplit) {
      const key = taskKey(g.split, g.taskIndex);
      const t = out.get(key);
      if (t) t.groups++;
      else {
        const first = byId.get(g.rolloutIds[0] ?? "");
        out.set(key, { key, split: g.split, taskIndex: g.taskIndex, label: first ? truncate(taskPreview(first.task), 60) : `task ${g.taskIndex}`, groups: 1 });
      }
    }
    return [...out.values()].sort((a, b) => a.taskIndex - b.taskIndex);
  }, [inSplit, byId]);
  const [task, setTask] = useState<string>("");
  const taskGroups = useMemo(() => (task ? inSplit.filter((g) => taskKey(g.split, g.taskIndex) === task) : inSplit), [inSplit, task]);
  const steps = useMemo(() => [...new Set(taskGroups.map((g) => g.step))].sort((a, b) => a - b), [taskGroups]);
  // null: the newest step (it moves as the run trains); a number: the step the user (or a link) chose.
  const [stepChoice, setStepChoice] = useState<number | null>(initialStep);
  const step = stepChoice !== null && steps.includes(stepChoice) ? stepChoice : (steps.length ? nearest(steps, stepChoice) : 0);
  const stepIndex = Math.max(0, steps.indexOf(step));
  const shown = task ? [] : taskGroups.filter((g) => g.step === step).slice(0, MAX_GROUPS_SHOWN);
  const flatCount = taskGroups.filter((g) => g.step === step && trainedNothing(g)).length;

  if (groups.length === 0) {
    return (
      <div className="p-4">
        <EmptyState title="No groups yet">Each task is sampled several times per step; its rollouts appear here side by side as they finish.</EmptyState>
      </div>
    );
  }
  return (
    <div className="flex min-h-0 flex-1 flex-col">
      <div className="flex shrink-0 flex-wrap items-center gap-2 border-b border-zinc-800 px-3 py-1.5 text-[12px]">
        <select
          aria-label="Split"
          value={split}
          onChange={(e) => {
            setSplit(e.target.value as "train" | "val");
            setTask("");
          }}
          className="h-6 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-zinc-200"
        >
          <option value="train">train groups</option>
          <option value="val">eval groups</option>
        </select>
        <select aria-label="Task" data-testid="group-task" value={task} onChange={(e) => setTask(e.target.value)} className="h-6 max-w-72 rounded border border-zinc-700 bg-zinc-900 px-1.5 text-zinc-200">
          <option value="">all tasks</option>
          {tasks.map((t) => (
            <option key={t.key} value={t.key}>
              task {t.taskIndex}: {t.label}
            </option>
          ))}
        </select>
        <label htmlFor="group-step-slider" className="ml-2 text-zinc-500">
          {split === "val" ? "eval @ step" : "step"}
        </label>
        <input
          id="group-step-slider"
          data-testid="group-step-slider"
          type="range"
          min={0}
          max={Math.max(0, steps.length - 1)}
          value={stepIndex}
          disabled={steps.length < 2}
          onChange={(e) => setStepChoice(steps[Number(e.target.value)] ?? null)}
          className="w-48 accent-amber-400"
        />
        <span data-testid="group-step" className="w-10 font-mono text-zinc-200 tabular-nums">
          {step}
        </span>
        <span className="text-zinc-600">
          {steps.length} step{steps.length === 1 ? "" : "s"}
          {stepChoice === null ? " · following the newest" : ""}
        </span>
        {flatCount > 0 && (
          <span className="text-zinc-500">
            {flatCount} group{flatCount === 1 ? "" : "s"} trained nothing
          </span>
        )}
      </div>
      <div className="min-h-0 flex-1 space-y-2 overflow-auto p-3">
        {task ? (
          <TaskAcrossSteps runId={runId} groups={taskGroups} byId={byId} step={step} onStep={setStepChoice} selectedId={selectedId} onSelect={onSelect} scaleRewards={scaleRewards} />
        ) : (
          shown.map((g) => (
            <GroupCard
              key={g.key}
              group={g}
              rollouts={g.rolloutIds.map((id) => byId.get(id)).filter((r): r is Rollout => r !== undefined)}
              selectedId={selectedId}
              onSelect={onSelect}
              scaleRewards={scaleRewards}
            />
          ))
        )}
        {!task && shown.length > 0 && <div className="text-[11px] text-zinc-600">Pick a task above to diff its rollouts and walk it across steps.</div>}
      </div>
    </div>
  );
}

/** The step in `steps` (sorted) closest to `want`; the newest when there is no wish. */
function nearest(steps: readonly number[], want: number | null): number {
  if (want === null) return steps[steps.length - 1]!;
  return steps.reduce((best, s) => (Math.abs(s - want) < Math.abs(best - want) ? s : best), steps[0]!);
}
