/**
 * Runs the pathology rules over a run's stored history and keeps RunFlag rows in step with what they
 * raise: a new flag is created (and alerted, and sent to the run's socket room); a flag whose condition
 * persists is extended (lastStep, steps, rolloutIds) in place. Idempotent: the same history changes nothing.
 */
import type { Prisma } from "@/generated/prisma/client";
import { isRunnerFault } from "@contracts";
import { raiseAlert } from "../notify/alerts";
import { emitRunFlag } from "@/server/run-hooks";
import type { RunFlagMessage } from "@contracts/socket-events";
import type { Db } from "@/server/db-types";
import { evalRewardsByStep } from "@/features/checkpoints/server";
import { FLAG_THRESHOLDS, type FlagThresholds } from "./config";
import { evaluateFlags } from "./evaluate";
import { FLAG_SEVERITIES, worseSeverity, type Flag, type FlagSeverity, type RolloutInput, type StepInput } from "./types";

/** Rollouts of this many most recent steps are read (plus the first hackWindow steps, the baseline). */
const RECENT_STEPS = 30;
/** Validation rollouts of this many most recent evals are read. */
const RECENT_EVALS = 3;

type FlagRow = Prisma.RunFlagGetPayload<object>;

export const flagMessage = (f: FlagRow): RunFlagMessage => ({
  id: f.id,
  runId: f.runId,
  rule: f.rule,
  severity: severityOf(f.severity),
  message: f.message,
  firstStep: f.firstStep,
  lastStep: f.lastStep,
  steps: f.steps,
  rolloutIds: f.rolloutIds,
  raisedAt: f.raisedAt.toISOString(),
});

/** A stored severity (a plain string column) as one of the three; anything else reads as a warning. */
const severityOf = (v: string): FlagSeverity => (FLAG_SEVERITIES as readonly string[]).includes(v) ? (v as FlagSeverity) : "warning";

const num = (v: unknown): number | null => (typeof v === "number" ? v : null);

function stepInput(step: number, m: Record<string, unknown>, groups: number, tokens: number | null): StepInput {
  const tr = m.trainer as Record<string, unknown> | null | undefined;
  return {
    step,
    reward_mean: num(m.reward_mean),
    reward_std_within_group: num(m.reward_std_within_group),
    exception_rate: num(m.exception_rate) ?? 0,
    groups_trainable: num(m.groups_trainable) ?? 0,
    groups,
    completion_tokens_mean: tokens,
    trainer: tr
      ? { loss: num(tr.loss), grad_norm: num(tr.grad_norm), kl: num(tr.kl), probs_corr: num(tr.probs_corr), skipped: tr.skipped === true }
      : null,
  };
}

/** The rules' input, read from Step and Trajectory rows. */
export async function loadRuleInput(db: Db, runId: string, t: FlagThresholds = FLAG_THRESHOLDS) {
  const run = await db.run.findUnique({ where: { id: runId }, select: { config: true, number: true } });
  const [steps, perStep, evalRewards, checkpoints] = await Promise.all([
    db.step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true, metrics: true } }),
    // Per step, from the charts' rows ingest keeps (features/metrics StepSeries): one row per step, where
    // aggregating every rollout after each step made this the costliest query of a long run's ingestion.
    db.stepSeries.findMany({ where: { runId, rollouts: { gt: 0 } }, select: { step: true, groups: true, completionMean: true } }),
    // validation_fell reads the evals of the checkpoints the run still has, as `<run>@best` does.
    evalRewardsByStep(db, runId),
    db.checkpoint.findMany({ where: { runId }, select: { step: true } }),
  ]);
  const scored = checkpoints.flatMap((c) => {
    const reward = evalRewards.get(c.step);
    return typeof reward === "number" ? [{ step: c.step, reward }] : [];
  });
  // The validation rollouts of the newest evals, which a validation_fell flag links (what the model now replies).
  const recentEvalSteps = scored.map((e) => e.step).sort((a, b) => a - b).slice(-RECENT_EVALS);
  const valRows = recentEvalSteps.length
    ? await db.trajectory.findMany({ where: { runId, split: "val", step: { in: recentEvalSteps } }, orderBy: { seq: "asc" }, select: { id: true, step: true } })
    : [];
  const evals = scored.map((e) => ({ ...e, rolloutIds: valRows.filter((r) => r.step === e.step).map((r) => r.id) }));
  const configGroups = num((run?.config as Record<string, unknown> | null)?.groups_per_step) ?? 0;
  const agg = new Map(perStep.map((r) => [r.step, { groups: r.groups, tokens: r.completionMean }]));
  const stepNums = steps.map((s) => s.step);
  const wanted = [...new Set([...stepNums.slice(0, t.hackWindow), ...stepNums.slice(-RECENT_STEPS)])];
  const rows = await db.trajectory.findMany({
    where: { runId, split: "train", step: { in: wanted } },
    select: { id: true, step: true, group: true, reward: true, metrics: true, tokens: true, error: true },
  });
  const rollouts: RolloutInput[] = rows.map((r) => ({
    id: r.id,
    step: r.step,
    group: r.group,
    reward: r.reward,
    metrics: Object.fromEntries(Object.entries((r.metrics ?? {}) as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === "number")),
    completion_tokens: num((r.tokens as Record<string, unknown> | null)?.completion) ?? 0,
    failed: r.error !== null,
    runner_fault: isRunnerFault((r.error as { kind?: string } | null)?.kind),
  }));
  return {
    steps: steps.map((s) => {
      const a = agg.get(s.step);
      return stepInput(s.step, (s.metrics ?? {}) as Record<string, unknown>, a && a.groups > 0 ? a.groups : configGroups, a?.tokens ?? null);
    }),
    rollouts,
    evals,
    runNumber: run?.number,
  };
}

/** The same flag as a stored one: same rule, and its steps overlap or directly continue the stored range. */
const sameFlag = (row: FlagRow, f: Flag) => row.rule === f.rule && row.firstStep <= f.lastStep && f.firstStep <= row.lastStep + 1;

const cap = (ids: string[]) => [...new Set(ids)].slice(0, FLAG_THRESHOLDS.maxRolloutIds);

/** Stores a flag (new, or extending its stored row); alerts and emits when new or changed. */
export async function storeFlag(db: Db, runId: string, f: Flag, existing: FlagRow[]): Promise<FlagRow | null> {
  const row = existing.find((r) => sameFlag(r, f));
  if (row) {
    const steps = [...new Set([...row.steps, ...f.steps])].sort((a, b) => a - b);
    const lastStep = Math.max(row.lastStep, f.lastStep);
    const before = severityOf(row.severity);
    const severity = worseSeverity(before, f.severity);
    const rolloutIds = cap([...f.rolloutIds, ...row.rolloutIds]);
    if (lastStep === row.lastStep && steps.length === row.steps.length && severity === row.severity && rolloutIds.length === row.rolloutIds.length) return null;
    const updated = await db.runFlag.update({ where: { id: row.id }, data: { lastStep, steps, severity, message: f.message, rolloutIds } });
    emitRunFlag(flagMessage(updated));
    // An info flag that became a problem (length that moved with the reward, then against it) is alerted now.
    if (before === "info" && severity !== "info") await alertFlag(db, runId, { ...f, severity, firstStep: row.firstStep });
    return updated;
  }
  const [created] = await db.runFlag.createManyAndReturn({
    data: [{ runId, rule: f.rule, severity: f.severity, message: f.message, firstStep: f.firstStep, lastStep: f.lastStep, steps: f.steps, rolloutIds: cap(f.rolloutIds) }],
    skipDuplicates: true,
  });
  if (!created) return null; // another evaluation stored it first
  existing.push(created);
  emitRunFlag(flagMessage(created));
  await alertFlag(db, runId, f);
  return created;
}

/** The workspace's alert for a flag, unless it is info (not a problem: on the run page, not in the bell) or
 * on a dry run (a preview its author is watching). */
async function alertFlag(db: Db, runId: string, f: Flag): Promise<void> {
  if (f.severity === "info") return;
  const run = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { workspaceId: true, number: true, kind: true } });
  if (run.kind === "dry_run") return;
  await raiseAlert(db, {
    workspaceId: run.workspaceId,
    runId,
    kind: f.rule === "stalled" ? "run.stalled" : "run.flag",
    key: `${runId}:flag:${f.rule}:${f.firstStep}`,
    severity: f.severity,
    title: `Run #${run.number}: ${RULE_TITLES[f.rule]}`,
    message: f.message,
    data: { runNumber: run.number, rule: f.rule, firstStep: f.firstStep, steps: f.steps, rolloutIds: cap(f.rolloutIds) },
  });
}

export const RULE_TITLES: Record<Flag["rule"], string> = {
  reward_collapse: "reward collapse",
  converged: "converged",
  length_drift: "length drift",
  reward_hacking: "reward hacking signs",
  low_probs_corr: "low probs_corr",
  kl_blowup: "KL blow-up",
  nonfinite_loss: "NaN/Inf loss",
  exception_rate: "exception rate rising",
  runner_faults: "rollouts lost to the runner",
  stalled: "stalled",
  validation_fell: "validation fell from its best",
};

/** Evaluate every rule on the run's history and store what they raise. Returns the flags created or changed. */
export async function evaluateRun(db: Db, runId: string): Promise<FlagRow[]> {
  const input = await loadRuleInput(db, runId);
  const flags = evaluateFlags(input);
  if (flags.length === 0) return [];
  const existing = await db.runFlag.findMany({ where: { runId } });
  const changed: FlagRow[] = [];
  for (const f of flags) {
    const row = await storeFlag(db, runId, f, existing);
    if (row) changed.push(row);
  }
  return changed;
}

export async function listRunFlags(db: Db, workspaceId: string, runId: string) {
  const run = await db.run.findFirst({ where: { id: runId, workspaceId }, select: { id: true } });
  if (!run) return null;
  const rows = await db.runFlag.findMany({ where: { runId }, orderBy: [{ firstStep: "asc" }, { raisedAt: "asc" }] });
  return rows.map(flagMessage);
}
