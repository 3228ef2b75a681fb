/**
 * The live view of one run, folded from its event log. Pure and order-independent: events may arrive
 * twice (a stored page and a socket replay overlap) or out of order (a live event before the stored page
 * that precedes it), and the folded state is the same either way. Every collection is keyed (rollouts by
 * id, steps by step, evals by step + model, logs by seq) and kept sorted, so applying the same set of
 * events in any order and any batching gives an equal state.
 */
import { groupRolloutAdvantages, type RolloutAdvantage } from "@contracts";
import type {
  EvalMetrics,
  RunEventOf,
  ServedCheckpoint,
  ServedRunEvent,
  RunStatus,
  StepMetrics,
  Trajectory,
} from "@contracts";
import { replyPreview, type RolloutSummary } from "../rollout-summary";
import { finishedOf, foldServerStatus, foldStatusEvents, initialStatusFold, shownStatus, type ServerStatus, type StatusFold } from "./status-fold";

export { isTerminal } from "./status-fold";

export interface RunLogLine {
  seq: number;
  ts: number;
  level: "info" | "warn" | "error";
  message: string;
}

/**
 * A rollout on the page: its summary (the first load ships no conversations: rollout-summary.ts), and the
 * whole trajectory's other fields when it arrived whole (live, or a catch-up page); `isWholeRollout` tells.
 */
export type Rollout = RolloutSummary &
  Partial<Pick<Trajectory, "messages" | "logs" | "output" | "turns" | "model">> & {
    /** Sequence number of the rollout.finished event that carried it: the order rollouts finished in. */
    seq: number;
  };

/** A rollout with its whole trajectory: what a transcript shows. */
export type WholeRollout = Rollout & Trajectory;

/** A rollout whose conversation is on the page (it arrived whole), so its transcript needs no request. */
export const isWholeRollout = (r: Rollout): r is WholeRollout => r.messages !== undefined;

/** A rollout.finished event of the first load, carrying the rollout's summary (GET …/events?view=summary). */
export type RolloutSummaryEvent = Omit<RunEventOf<"rollout.finished">, "payload"> & { payload: RolloutSummary };
/** What the reducer folds: the log's events, some rollout.finished ones carrying summaries. */
/** What the page is sent: served events (no checkpoint paths: contracts/run.ts), rollouts as summaries on first load. */
export type PageEvent = ServedRunEvent | RolloutSummaryEvent;

function toRollout(payload: Trajectory | RolloutSummary, seq: number): Rollout {
  return "messages" in payload ? { ...payload, reply: replyPreview(payload.messages), seq } : { ...payload, seq };
}

export interface TrainProgress {
  seq: number;
  step: number;
  micro_batch: number;
  micro_batches: number;
  loss: number;
}

/** One GRPO group: the rollouts of one task sampled together at one step. */
export interface RolloutGroup {
  key: string;
  split: "train" | "val";
  step: number;
  group: number;
  taskIndex: number;
  /** Rollout ids, ordered by finish (seq). */
  rolloutIds: string[];
  /** Mean and population std of the non-null rewards; null while no rollout has a reward. */
  rewardMean: number | null;
  rewardStd: number | null;
  errorCount: number;
  /**
   * Per rollout id: reward − group mean, and the advantage the trainer used with scale_rewards on (GRPO);
   * with it off the trainer used the raw one. contracts/signals.ts, the trainer's own arithmetic.
   */
  advantages: Record<string, { raw: number | null; scaled: number | null }>;
}

export type RunStarted = RunEventOf<"run.started">["payload"];
export type RunFinished = RunEventOf<"run.finished">["payload"];
export type { ServerStatus } from "./status-fold";

export interface RunViewState {
  /** Every seq folded so far: the dedupe set. */
  seen: ReadonlySet<number>;
  /** Highest seq seen. */
  maxSeq: number;
  /** Highest n such that 1..n have all been seen: a gap-free resume point ("after seq n"). */
  contiguousSeq: number;
  /** The status to show (status-fold.ts: by attempt, then seq; the server's snapshots folded in). */
  status: RunStatus | null;
  /** The newest attempt known (0: none yet). */
  attempt: number;
  /** How the newest attempt's status was folded (status-fold.ts). */
  statusFold: StatusFold;
  /** The first run.started (a resume logs another; the first carries the run's config). */
  started: RunStarted | null;
  /** The newest attempt's run.finished, while it is the final word on that attempt. */
  finished: RunFinished | null;
  logs: RunLogLine[];
  /** Sorted by seq (finish order). */
  rollouts: Rollout[];
  /** Sorted by step. */
  steps: StepMetrics[];
  /** Sorted by step, then model. */
  evals: EvalMetrics[];
  /** Sorted by step. */
  checkpoints: ServedCheckpoint[];
  /** The latest train.progress event (by seq). */
  trainProgress: TrainProgress | null;
  /** Keyed by groupKey(); see `groupList` for the sorted list. */
  groups: Readonly<Record<string, RolloutGroup>>;
  /** Sorted by split (train first), step, group. */
  groupList: RolloutGroup[];
  errorCount: number;
}

export const initialRunState: RunViewState = {
  seen: new Set(),
  maxSeq: 0,
  contiguousSeq: 0,
  status: null,
  attempt: 0,
  statusFold: initialStatusFold,
  started: null,
  finished: null,
  logs: [],
  rollouts: [],
  steps: [],
  evals: [],
  checkpoints: [],
  trainProgress: null,
  groups: {},
  groupList: [],
  errorCount: 0,
};

export type RunAction =
  | { type: "events"; events: readonly PageEvent[] }
  /** A status from outside the log (runs.get, socket `run:status`), with the attempt it is about. */
  | ({ type: "status" } & ServerStatus)
  | { type: "reset" };

export function runReducer(state: RunViewState, action: RunAction): RunViewState {
  switch (action.type) {
    case "events":
      return applyEvents(state, action.events);
    case "status":
      return withStatusFold(state, foldServerStatus(state.statusFold, action));
    case "reset":
      return initialRunState;
  }
}

function withStatusFold(state: RunViewState, statusFold: StatusFold): RunViewState {
  if (statusFold === state.statusFold) return state;
  return { ...state, statusFold, status: shownStatus(statusFold), attempt: statusFold.attempt, finished: finishedOf(statusFold) };
}

export function groupKey(t: Pick<Trajectory, "split" | "step" | "group">): string {
  return `${t.split}:${t.step}:${t.group}`;
}

const bySeq = (a: { seq: number }, b: { seq: number }) => a.seq - b.seq;

/** Fold a batch of events; returns the same object when nothing new arrived. */
export function applyEvents(state: RunViewState, events: readonly PageEvent[]): RunViewState {
  const fresh: PageEvent[] = [];
  const batchSeen = new Set<number>();
  for (const e of events) {
    if (state.seen.has(e.seq) || batchSeen.has(e.seq)) continue;
    batchSeen.add(e.seq);
    fresh.push(e);
  }
  if (fresh.length === 0) return state;
  fresh.sort(bySeq);

  const seen = new Set(state.seen);
  for (const s of batchSeen) seen.add(s);
  let contiguousSeq = state.contiguousSeq;
  while (seen.has(contiguousSeq + 1)) contiguousSeq++;
  const maxSeq = Math.max(state.maxSeq, fresh[fresh.length - 1]!.seq);

  let { started, trainProgress } = state;
  let startedSeq = started ? -1 : 0;
  let logs: RunLogLine[] | null = null;
  let rolloutsById: Map<string, Rollout> | null = null;
  let steps: Map<number, StepMetrics> | null = null;
  let evals: Map<string, EvalMetrics> | null = null;
  let checkpoints: Map<number, ServedCheckpoint> | null = null;
  const touchedGroups = new Set<string>();

  for (const e of fresh) {
    switch (e.type) {
      case "run.started":
        // Keep the earliest run.started (a resumed run logs another one later).
        if (!started || e.seq < startedSeq) {
          started = e.payload;
          startedSeq = e.seq;
        }
        break;
      case "run.log":
        logs ??= [...state.logs];
        logs.push({ seq: e.seq, ts: e.ts, level: e.payload.level, message: e.payload.message });
        break;
      case "rollout.finished": {
        rolloutsById ??= new Map(state.rollouts.map((r) => [r.id, r]));
        const prev = rolloutsById.get(e.payload.id);
        // The same trajectory re-emitted (e.g. after a runner resume): the later one wins.
        if (!prev || prev.seq < e.seq) {
          if (prev) touchedGroups.add(groupKey(prev));
          rolloutsById.set(e.payload.id, toRollout(e.payload, e.seq));
          touchedGroups.add(groupKey(e.payload));
        }
        break;
      }
      case "step.finished":
        steps ??= new Map(state.steps.map((s) => [s.step, s]));
        steps.set(e.payload.step, e.payload);
        break;
      case "eval.finished":
        evals ??= new Map(state.evals.map((v) => [`${v.step}|${v.model}`, v]));
        evals.set(`${e.payload.step}|${e.payload.model}`, e.payload);
        break;
      case "checkpoint.saved":
        checkpoints ??= new Map(state.checkpoints.map((c) => [c.step, c]));
        checkpoints.set(e.payload.step, e.payload);
        break;
      case "train.progress":
        if (!trainProgress || trainProgress.seq < e.seq) trainProgress = { seq: e.seq, ...e.payload };
        break;
    }
  }

  const next: RunViewState = withStatusFold(
    {
      ...state,
      seen,
      maxSeq,
      contiguousSeq,
      started,
      trainProgress,
    },
    foldStatusEvents(state.statusFold, fresh),
  );
  if (logs) next.logs = logs.sort(bySeq);
  if (steps) next.steps = [...steps.values()].sort((a, b) => a.step - b.step);
  if (evals) next.evals = [...evals.values()].sort((a, b) => a.step - b.step || a.model.localeCompare(b.model));
  if (checkpoints) next.checkpoints = [...checkpoints.values()].sort((a, b) => a.step - b.step);
  if (rolloutsById) {
    next.rollouts = [...rolloutsById.values()].sort(bySeq);
    next.errorCount = next.rollouts.reduce((n, r) => n + (r.error ? 1 : 0), 0);
    const groups: Record<string, RolloutGroup> = { ...state.groups };
    for (const key of touchedGroups) delete groups[key];
    for (const r of next.rollouts) {
      const key = groupKey(r);
      if (!touchedGroups.has(key)) continue;
      const g = (groups[key] ??= {
        key,
        split: r.split,
        step: r.step,
        group: r.group,
        taskIndex: r.task_index,
        rolloutIds: [],
        rewardMean: null,
        rewardStd: null,
        errorCount: 0,
        advantages: {},
      });
      g.rolloutIds.push(r.id);
    }
    for (const key of touchedGroups) {
      const g = groups[key];
      if (g) summariseGroup(g, rolloutsById);
    }
    next.groups = groups;
    next.groupList = Object.values(groups).sort(compareGroups);
  }
  return next;
}

function compareGroups(a: RolloutGroup, b: RolloutGroup): number {
  if (a.split !== b.split) return a.split === "train" ? -1 : 1;
  return a.step - b.step || a.group - b.group;
}

function summariseGroup(g: RolloutGroup, byId: ReadonlyMap<string, Rollout>): void {
  const rewards: number[] = [];
  let errors = 0;
  const members: Rollout[] = [];
  for (const id of g.rolloutIds) {
    const r = byId.get(id);
    if (!r) continue;
    members.push(r);
    if (r.error) errors++;
    if (r.reward !== null && Number.isFinite(r.reward)) rewards.push(r.reward);
  }
  g.errorCount = errors;
  const stats = meanStd(rewards);
  g.rewardMean = stats?.mean ?? null;
  g.rewardStd = stats?.std ?? null;
  const scaled = groupRolloutAdvantages(members, true);
  g.advantages = {};
  for (const [id, a] of scaled) g.advantages[id] = { raw: a.raw, scaled: a.trained };
}

export function meanStd(values: readonly number[]): { mean: number; std: number } | null {
  if (values.length === 0) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  return { mean, std: Math.sqrt(variance) };
}

/**
 * Both advantages of one rollout (contracts/signals.ts): `raw` = reward − group mean, `trained` = what the
 * trainer multiplied its tokens by under the run's trainer.scale_rewards (the token view's number). Null
 * for a rollout that did not reach the trainer (failed, eval, a group with fewer than 2).
 */
export function rolloutAdvantage(
  rolloutId: string,
  group: Pick<RolloutGroup, "advantages"> | undefined,
  scaleRewards: boolean,
): RolloutAdvantage {
  const a = group?.advantages[rolloutId];
  if (!a) return { raw: null, trained: null };
  return { raw: a.raw, trained: scaleRewards ? a.scaled : a.raw };
}

/** The run's trainer.scale_rewards (its default, true, until run.started is on the page). */
export const runScalesRewards = (state: Pick<RunViewState, "started">): boolean => state.started?.config.trainer.scale_rewards ?? true;

/** Rollouts of one group, in finish order. */
export function groupRollouts(state: RunViewState, key: string): Rollout[] {
  const g = state.groups[key];
  if (!g) return [];
  const ids = new Set(g.rolloutIds);
  return state.rollouts.filter((r) => ids.has(r.id));
}
