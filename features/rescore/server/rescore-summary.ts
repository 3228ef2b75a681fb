/**
 * Re-score's comparison, pure: per trajectory the stored reward and advantage against the re-scored ones,
 * then per task and overall — mean reward old → new, how many rewards changed, advantage sign flips, and
 * training groups that lose (or gain) reward variance and so stop (or start) teaching anything. The
 * advantages are the trainer's (groupTraining in the contracts mirrors trainer/advantages.py), computed
 * per training group (split "train", one step's group) with each side's trainer.scale_rewards.
 */
import { groupTraining, type RescoredTrajectory, type RolloutError } from "@contracts";

/** Rewards closer than this are "unchanged" (float noise from re-running the same arithmetic). */
export const REWARD_EPSILON = 1e-9;
/** Log lines kept per trajectory in the answer (a reward may log a lot; the first lines say what it saw). */
const MAX_LOG_LINES = 20;

/** A stored trajectory as the comparison needs it. */
export interface StoredForRescore {
  id: string;
  seq: number;
  step: number;
  group: number;
  taskIndex: number;
  split: "train" | "val";
  task: unknown;
  reward: number | null;
  error: RolloutError | null;
  /** It made at least one model call, so a valid reward gives it a training sample. */
  madeModelCall: boolean;
  /** The scenario's output was recorded with it (runs before outputs were kept have none). */
  outputRecorded: boolean;
}

export type RescoreRowStatus = "rescored" | "skipped";

export interface RescoreRow {
  id: string;
  seq: number;
  step: number;
  group: number;
  taskIndex: number;
  split: "train" | "val";
  status: RescoreRowStatus;
  /** Why it was not re-scored (the scenario itself failed: the reward never had an output to score). */
  skippedReason: string | null;
  oldReward: number | null;
  newReward: number | null;
  oldError: RolloutError | null;
  newError: RolloutError | null;
  /** The GRPO advantage it trained with (null: did not train — failed, zero advantage, untrainable group, or not a training rollout). */
  oldAdvantage: number | null;
  newAdvantage: number | null;
  changed: boolean;
  signFlip: boolean;
  outputRecorded: boolean;
  newMetrics: Record<string, number>;
  newLogs: string[];
  durationMs: number;
}

export interface RescoreStats {
  trajectories: number;
  rescored: number;
  oldMean: number | null;
  newMean: number | null;
  /** newMean − oldMean (null when either side has no reward). */
  delta: number | null;
  changed: number;
  newErrors: number;
  /** Trajectories whose error went away under the new reward. */
  fixedErrors: number;
  signFlips: number;
  groups: number;
  groupsBecameUntrainable: number;
  groupsBecameTrainable: number;
}

export interface RescoreTaskRow extends RescoreStats {
  split: "train" | "val";
  taskIndex: number;
  task: unknown;
}

export interface RescoreComparison {
  rows: RescoreRow[];
  tasks: RescoreTaskRow[];
  overall: RescoreStats;
}

/**
 * A stored trajectory is re-scored when its reward ran: it has no error, or the error is the reward's, or
 * the scenario returned an output (so whatever failed came after it). Otherwise the scenario failed and
 * there is nothing for a reward to score.
 */
export function rescorable(t: Pick<StoredForRescore, "error" | "outputRecorded">, output: unknown): boolean {
  return t.error === null || t.error.kind === "reward" || (t.outputRecorded && output !== null && output !== undefined);
}

function sameReward(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return a === b;
  return Math.abs(a - b) <= REWARD_EPSILON;
}

const opposite = (a: number | null, b: number | null) => a !== null && b !== null && Math.sign(a) * Math.sign(b) < 0;

function mean(xs: readonly (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? v.reduce((s, x) => s + x, 0) / v.length : null;
}

interface GroupOutcome {
  key: string;
  taskKey: string;
  oldTrainable: boolean;
  newTrainable: boolean;
}

function stats(rows: readonly RescoreRow[], groups: readonly GroupOutcome[]): RescoreStats {
  const oldMean = mean(rows.map((r) => r.oldReward));
  const newMean = mean(rows.map((r) => r.newReward));
  return {
    trajectories: rows.length,
    rescored: rows.filter((r) => r.status === "rescored").length,
    oldMean,
    newMean,
    delta: oldMean !== null && newMean !== null ? newMean - oldMean : null,
    changed: rows.filter((r) => r.changed).length,
    newErrors: rows.filter((r) => r.status === "rescored" && r.newError !== null).length,
    fixedErrors: rows.filter((r) => r.status === "rescored" && r.oldError !== null && r.newError === null).length,
    signFlips: rows.filter((r) => r.signFlip).length,
    groups: groups.length,
    groupsBecameUntrainable: groups.filter((g) => g.oldTrainable && !g.newTrainable).length,
    groupsBecameTrainable: groups.filter((g) => !g.oldTrainable && g.newTrainable).length,
  };
}

const taskKeyOf = (t: { split: string; taskIndex: number }) => `${t.split}:${t.taskIndex}`;

/**
 * `results` maps a re-scored trajectory's id to what the runner answered; a stored trajectory missing
 * from it was skipped (`skipped` gives the reason).
 */
export function compareRescore(
  stored: readonly StoredForRescore[],
  results: ReadonlyMap<string, RescoredTrajectory>,
  skipped: ReadonlyMap<string, string>,
  scale: { old: boolean; new: boolean },
): RescoreComparison {
  const rows: RescoreRow[] = stored.map((t) => {
    const r = results.get(t.id);
    return {
      id: t.id,
      seq: t.seq,
      step: t.step,
      group: t.group,
      taskIndex: t.taskIndex,
      split: t.split,
      status: r ? "rescored" : "skipped",
      skippedReason: r ? null : (skipped.get(t.id) ?? "not re-scored"),
      oldReward: t.error ? null : t.reward,
      newReward: r ? r.reward : t.error ? null : t.reward,
      oldError: t.error,
      newError: r ? r.error : t.error,
      oldAdvantage: null,
      newAdvantage: null,
      changed: false,
      signFlip: false,
      outputRecorded: t.outputRecorded,
      newMetrics: r?.metrics ?? {},
      newLogs: (r?.logs ?? []).slice(0, MAX_LOG_LINES),
      durationMs: r?.duration_ms ?? 0,
    };
  });

  // Training groups: one step's group of the train split, members in stored order.
  const byGroup = new Map<string, number[]>();
  rows.forEach((row, i) => {
    if (row.split !== "train") return;
    const key = `${row.step}:${row.group}`;
    const list = byGroup.get(key) ?? [];
    list.push(i);
    byGroup.set(key, list);
  });
  const groups: GroupOutcome[] = [];
  for (const [key, members] of byGroup) {
    const before = groupTraining(
      members.map((i) => ({ reward: rows[i]!.oldReward, hasSample: stored[i]!.madeModelCall })),
      scale.old,
    );
    const after = groupTraining(
      members.map((i) => ({ reward: rows[i]!.newReward, hasSample: stored[i]!.madeModelCall })),
      scale.new,
    );
    members.forEach((i, k) => {
      rows[i]!.oldAdvantage = before.advantages[k] ?? null;
      rows[i]!.newAdvantage = after.advantages[k] ?? null;
    });
    groups.push({ key, taskKey: taskKeyOf(rows[members[0]!]!), oldTrainable: before.trainable, newTrainable: after.trainable });
  }
  for (const row of rows) {
    row.changed = !sameReward(row.oldReward, row.newReward);
    row.signFlip = opposite(row.oldAdvantage, row.newAdvantage);
  }

  const taskRows = new Map<string, { split: "train" | "val"; taskIndex: number; task: unknown; rows: RescoreRow[] }>();
  rows.forEach((row, i) => {
    const key = taskKeyOf(row);
    const entry = taskRows.get(key) ?? { split: row.split, taskIndex: row.taskIndex, task: stored[i]!.task, rows: [] };
    entry.rows.push(row);
    taskRows.set(key, entry);
  });
  const tasks: RescoreTaskRow[] = [...taskRows.entries()].map(([key, t]) => ({
    split: t.split,
    taskIndex: t.taskIndex,
    task: t.task,
    ...stats(
      t.rows,
      groups.filter((g) => g.taskKey === key),
    ),
  }));
  // Biggest change first: the tasks an edit moved most are the ones to look at.
  tasks.sort((a, b) => Math.abs(b.delta ?? 0) - Math.abs(a.delta ?? 0) || b.changed - a.changed || a.taskIndex - b.taskIndex);

  return { rows, tasks, overall: stats(rows, groups) };
}
