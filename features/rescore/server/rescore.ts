/**
 * Re-score a past run (a what-if, nothing is written): its stored trajectories — task, messages and the
 * scenario's output recorded with each — go to a runner with the run's frozen files and the user's edits
 * laid over them; the runner runs the edited reward over each (gpu-runner/src/rescore/); the comparison
 * (rescore-summary.ts) gives old vs new rewards and GRPO advantages per trajectory, per task and overall.
 *
 * At most RESCORE_MAX_TRAJECTORIES (2,000) trajectories per call, whole training groups only (a cap that
 * cut a group in two would change its advantages); the answer says when it was capped and of how many.
 */
import { z } from "zod";
import {
  ExperimentFiles,
  RESCORE_MAX_TRAJECTORIES,
  isExperimentPath,
  type Diagnostic,
  type RescoredTrajectory,
  type RescoreTrajectory,
  type RolloutError,
  type RunConfig,
  type Trajectory,
} from "@contracts";
import { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import { workspaceRunSpec } from "@/features/workspace/server";
import type { RunnerHandle } from "@/server/runner-client";
import { parseStoredFiles } from "@/features/experiments/server";
import { fromDbKind } from "@/server/run-convert";
import { compareRescore, rescorable, type RescoreComparison, type StoredForRescore } from "./rescore-summary";
import type { DbOrTx } from "@/server/db-types";

export const RescoreRunInput = z.object({
  runId: z.string().min(1),
  /** The edited files (reward.ts, and any others), laid over the run's frozen files. */
  files: z.record(z.string(), z.string()),
  /** Only this step's trajectories. */
  step: z.number().int().min(0).optional(),
  /** Only this split's trajectories. */
  split: z.enum(["train", "val"]).optional(),
});
export type RescoreRunInput = z.infer<typeof RescoreRunInput>;

export type RescoreRunResult =
  | { ok: false; error: string; diagnostics: Diagnostic[] }
  | ({
      ok: true;
      /** Trajectories matching the filter in the run, and how many were loaded (≤ limit). */
      available: number;
      loaded: number;
      limit: number;
      capped: boolean;
      /** Steps the loaded trajectories span (null when none). */
      steps: { first: number; last: number } | null;
      /** Re-scored trajectories that had no recorded output (recorded before outputs were kept): their reward saw output = null. */
      outputsMissing: number;
      groupReward: boolean;
      scaleRewards: { old: boolean; new: boolean };
      /** Warnings from the check of the edited files. */
      diagnostics: Diagnostic[];
      durationMs: number;
    } & RescoreComparison);

const ROW_SELECT = {
  id: true,
  seq: true,
  step: true,
  group: true,
  taskIndex: true,
  split: true,
  task: true,
  messages: true,
  reward: true,
  error: true,
  tokens: true,
} satisfies Prisma.TrajectorySelect;
type Row = Prisma.TrajectoryGetPayload<{ select: typeof ROW_SELECT }>;

/** The user's edits over the frozen files; a path that is no experiment file is refused by name. */
function overlay(frozen: ExperimentFiles, edits: Record<string, string>): ExperimentFiles {
  for (const path of Object.keys(edits)) {
    if (!isExperimentPath(path)) throw new AppError("BAD_INPUT", `files: "${path}" is not an experiment file (scenario.ts, reward.ts, tasks.jsonl, config.json or lib/**/*.ts)`);
  }
  const merged = ExperimentFiles.safeParse({ ...frozen, ...edits });
  if (!merged.success) {
    const issue = merged.error.issues[0];
    throw new AppError("BAD_INPUT", `files${issue?.path.length ? `.${issue.path.join(".")}` : ""}: ${issue?.message ?? "invalid"}`);
  }
  return merged.data;
}

/** The rows to re-score: the filter's trajectories in group order, cut at the cap on a group boundary. */
async function loadRows(db: DbOrTx, runId: string, where: Prisma.TrajectoryWhereInput): Promise<{ rows: Row[]; capped: boolean }> {
  const rows = await db.trajectory.findMany({
    where,
    orderBy: [{ split: "asc" }, { step: "asc" }, { group: "asc" }, { seq: "asc" }],
    take: RESCORE_MAX_TRAJECTORIES + 1,
    select: ROW_SELECT,
  });
  if (rows.length <= RESCORE_MAX_TRAJECTORIES) return { rows, capped: false };
  const kept = rows.slice(0, RESCORE_MAX_TRAJECTORIES);
  const next = rows[RESCORE_MAX_TRAJECTORIES]!;
  const cut = (r: Row) => r.split === next.split && r.step === next.step && r.group === next.group;
  const whole = kept.filter((r) => !cut(r));
  return { rows: whole.length > 0 ? whole : kept, capped: true };
}

/** The scenario outputs recorded in the rollout.finished events (the Trajectory table has no column for them). */
async function loadOutputs(db: DbOrTx, runId: string, seqs: readonly number[]): Promise<Map<number, unknown>> {
  const out = new Map<number, unknown>();
  if (seqs.length === 0) return out;
  const found = await db.$queryRaw<{ seq: number; output: unknown }[]>`
    SELECT "seq", "payload"->'output' AS "output" FROM "RunEvent"
    WHERE "runId" = ${runId} AND "type" = 'rollout.finished' AND "payload" ? 'output' AND "seq" IN (${Prisma.join(seqs)})`;
  for (const r of found) out.set(Number(r.seq), r.output);
  return out;
}

export async function rescoreRun(
  db: DbOrTx,
  workspaceId: string,
  input: RescoreRunInput,
  runners: { byId: (id: string) => Promise<RunnerHandle>; default: () => Promise<RunnerHandle> },
): Promise<RescoreRunResult> {
  const run = await db.run.findFirst({
    where: { id: input.runId, workspaceId },
    select: { id: true, kind: true, runnerId: true, config: true, version: { select: { files: true } } },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
  if (!Object.hasOwn(input.files, "reward.ts")) throw new AppError("BAD_INPUT", 'files: give the edited "reward.ts"');
  const files = overlay(parseStoredFiles(run.version.files), input.files);

  const where: Prisma.TrajectoryWhereInput = {
    runId: run.id,
    ...(input.step !== undefined ? { step: input.step } : {}),
    ...(input.split ? { split: input.split } : {}),
  };
  const [available, { rows, capped }] = await Promise.all([db.trajectory.count({ where }), loadRows(db, run.id, where)]);
  const outputs = await loadOutputs(
    db,
    run.id,
    rows.map((r) => r.seq),
  );

  const stored: StoredForRescore[] = rows.map((r) => {
    const tokens = (r.tokens ?? {}) as Partial<Trajectory["tokens"]>;
    return {
      id: r.id,
      seq: r.seq,
      step: r.step,
      group: r.group,
      taskIndex: r.taskIndex,
      split: r.split === "val" ? "val" : "train",
      task: r.task,
      reward: r.reward,
      error: (r.error ?? null) as RolloutError | null,
      madeModelCall: (tokens.prompt ?? 0) > 0 || (tokens.completion ?? 0) > 0,
      outputRecorded: outputs.has(r.seq),
    };
  });
  const send: RescoreTrajectory[] = [];
  const skipped = new Map<string, string>();
  rows.forEach((r, i) => {
    const s = stored[i]!;
    const output = outputs.get(r.seq) ?? null;
    if (!rescorable(s, output)) {
      skipped.set(r.id, `not re-scored: the scenario failed (${s.error?.kind ?? "error"}), so its reward never ran`);
      return;
    }
    send.push({ id: r.id, split: s.split, step: r.step, group: r.group, task: r.task, output, messages: r.messages as Trajectory["messages"] });
  });

  const runner = run.runnerId ? await runners.byId(run.runnerId) : await runners.default();
  const kind = fromDbKind(run.kind);
  const { workspace_id, secrets } = await workspaceRunSpec(db, workspaceId, files, kind);
  const res = await runner.rescore({ workspace_id, secrets, files, kind, trajectories: send });
  if (!res.ok) return { ok: false, error: res.error, diagnostics: res.diagnostics };
  if (res.results.length !== send.length) {
    throw new AppError("RUNNER_ERROR", `runner '${runner.name}' answered ${res.results.length} re-scores for ${send.length} trajectories`);
  }
  const results = new Map<string, RescoredTrajectory>(res.results.map((r) => [r.id, r]));
  const frozenScale = (run.config as unknown as Partial<RunConfig> | null)?.trainer?.scale_rewards ?? true;
  const comparison = compareRescore(stored, results, skipped, { old: frozenScale, new: res.scale_rewards });

  return {
    ok: true,
    available,
    loaded: rows.length,
    limit: RESCORE_MAX_TRAJECTORIES,
    capped,
    steps: rows.length ? { first: Math.min(...rows.map((r) => r.step)), last: Math.max(...rows.map((r) => r.step)) } : null,
    outputsMissing: stored.filter((s) => !s.outputRecorded && results.has(s.id)).length,
    groupReward: res.group_reward,
    scaleRewards: { old: frozenScale, new: res.scale_rewards },
    diagnostics: res.diagnostics,
    durationMs: res.duration_ms,
    ...comparison,
  };
}
