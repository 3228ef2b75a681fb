/**
 * Compare 2–8 runs of one workspace (W&B's run comparison, Braintrust's per-task deltas): each run's header,
 * step metrics and evals for overlaid charts, its frozen config (and the key paths where configs differ),
 * the exact files it ran, and per-task mean rewards against a chosen baseline run, regressions first.
 *
 * The per-task numbers are aggregated in Postgres (one groupBy over Trajectory), never by loading every
 * rollout: a run can hold hundreds of thousands of them.
 */
import { meanRewardOf, type Diagnostic, type EvalMetrics, type RunConfig, type StepMetrics } from "@contracts";
import { Prisma } from "@/generated/prisma/client";
import { COMPARE_MAX_RUNS, COMPARE_MIN_RUNS } from "@/features/compare/compare-url";
import { AppError } from "@/server/errors";
import { parseStoredFiles } from "@/features/experiments/server";
import { fromDbKind } from "@/server/run-convert";
import type { DbOrTx } from "@/server/db-types";

/** A change in a task's mean reward smaller than this is "unchanged" (float noise, not a regression). */
const EPSILON = 1e-9;

export type CompareInput = { runIds: string[]; baselineRunId: string };

/** One row of the config diff: a key path and its value in each run (in the order of `runs`). */
export type ConfigDiffRow = {
  path: string;
  /** JSON text of the value per run; null where the run's config has no such key. */
  values: (string | null)[];
  same: boolean;
};

/** One task's mean reward in one run, and its change against the baseline's. */
export type TaskCell = {
  runId: string;
  /** Mean over the rollouts that were scored (failed rollouts have no reward, as in the step metrics). */
  mean: number | null;
  rollouts: number;
  scored: number;
  errors: number;
  /** mean − the baseline's mean; null for the baseline itself or when either side has no score. */
  delta: number | null;
};

export type TaskDeltaRow = {
  taskIndex: number;
  /** The task as the baseline ran it (else as the first run that has it). */
  task: unknown;
  /** True when some run's task at this index is not the baseline's (their tasks.jsonl differ). */
  taskDiffers: boolean;
  cells: TaskCell[];
  /** The most negative delta over the compared runs: what the rows are sorted by. */
  worstDelta: number | null;
};

export type RunTaskSummary = {
  runId: string;
  /** Which step's rollouts were used (null: the run has none in the chosen split). */
  step: number | null;
  tasks: number;
  regressions: number;
  improvements: number;
  unchanged: number;
  /** Tasks only one of this run and the baseline has, or that neither could score. */
  incomparable: number;
};

/** Splits every compared run has, with each run's newest step in that split. */
type SplitSteps = Map<string, Map<"train" | "val", number>>;

function checkInput(input: CompareInput): void {
  const { runIds, baselineRunId } = input;
  if (runIds.length < COMPARE_MIN_RUNS || runIds.length > COMPARE_MAX_RUNS) {
    throw new AppError("BAD_INPUT", `runIds: pick ${COMPARE_MIN_RUNS} to ${COMPARE_MAX_RUNS} runs to compare (got ${runIds.length})`);
  }
  const seen = new Set<string>();
  for (const id of runIds) {
    if (seen.has(id)) throw new AppError("BAD_INPUT", `runIds: run ${id} is listed twice`);
    seen.add(id);
  }
  if (!seen.has(baselineRunId)) throw new AppError("BAD_INPUT", `baselineRunId: run ${baselineRunId} is not one of runIds`);
}

/**
 * Flattens a JSON value to key paths → JSON text of the leaves. Arrays are leaves: a list of stop strings
 * or tool names reads better as one value than as `stop.0`, `stop.1`.
 */
export function flattenConfig(value: unknown, prefix = "", out = new Map<string, string>()): Map<string, string> {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0 && prefix) out.set(prefix, "{}");
    for (const [k, v] of entries) flattenConfig(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.set(prefix, JSON.stringify(value) ?? "null");
  }
  return out;
}

/** Every key path of any config, in path order, with its value per config; `same` when all agree. */
export function diffConfigs(configs: readonly unknown[]): ConfigDiffRow[] {
  const flat = configs.map((c) => flattenConfig(c));
  const paths = [...new Set(flat.flatMap((f) => [...f.keys()]))].sort();
  return paths.map((path) => {
    const values = flat.map((f) => f.get(path) ?? null);
    return { path, values, same: values.every((v) => v === values[0]) };
  });
}

/**
 * Which rollouts stand for "how the run does on each task":
 *   - the validation split, at each run's newest eval step, when EVERY compared run has validation
 *     rollouts: the same held-out tasks, scored by the final (or latest) model of each run — the fair
 *     comparison, and the only split an eval run has;
 *   - otherwise the train split at each run's newest step: the closest thing to the final policy a run
 *     without evals has. (A train step samples groups_per_step tasks, so runs may share only some tasks;
 *     the others show as incomparable rather than being dropped.)
 */
function chooseSplit(runIds: readonly string[], steps: SplitSteps): "train" | "val" {
  return runIds.every((id) => steps.get(id)?.has("val")) ? "val" : "train";
}

async function perTaskDeltas(db: DbOrTx, runIds: string[], baselineRunId: string) {
  const newest = await db.trajectory.groupBy({
    by: ["runId", "split"],
    where: { runId: { in: runIds } },
    _max: { step: true },
  });
  const steps: SplitSteps = new Map(runIds.map((id) => [id, new Map()]));
  for (const g of newest) {
    if ((g.split === "train" || g.split === "val") && g._max.step !== null) steps.get(g.runId)!.set(g.split, g._max.step);
  }
  const split = chooseSplit(runIds, steps);
  const stepOf = (id: string) => steps.get(id)?.get(split) ?? null;
  const picks = runIds.flatMap((id) => {
    const step = stepOf(id);
    return step === null ? [] : [{ runId: id, split, step }];
  });

  const groups =
    picks.length === 0
      ? []
      : await db.trajectory.groupBy({
          by: ["runId", "taskIndex"],
          where: { OR: picks },
          _avg: { reward: true },
          // _count.reward counts the scored rollouts (reward is null when a rollout failed).
          _count: { _all: true, reward: true },
        });

  // One task JSON per (run, task) for display and for noticing runs whose task lists differ — one row
  // each (DISTINCT ON), not every rollout's copy.
  const taskRows =
    picks.length === 0
      ? []
      : await db.$queryRaw<{ runId: string; taskIndex: number; task: unknown }[]>`
          SELECT DISTINCT ON ("runId", "taskIndex") "runId", "taskIndex", "task"
          FROM "Trajectory"
          WHERE ${Prisma.join(
            picks.map((p) => Prisma.sql`("runId" = ${p.runId} AND "split" = ${p.split} AND "step" = ${p.step})`),
            " OR ",
          )}
          ORDER BY "runId", "taskIndex", "seq"`;
  const taskOf = new Map(taskRows.map((r) => [`${r.runId}\u0000${r.taskIndex}`, r.task]));

  const byTask = new Map<number, Map<string, (typeof groups)[number]>>();
  for (const g of groups) {
    if (!byTask.has(g.taskIndex)) byTask.set(g.taskIndex, new Map());
    byTask.get(g.taskIndex)!.set(g.runId, g);
  }

  const rows: TaskDeltaRow[] = [...byTask.entries()].map(([taskIndex, perRun]) => {
    const meanOf = (id: string) => {
      const g = perRun.get(id);
      return g && g._count.reward > 0 ? (g._avg.reward ?? null) : null;
    };
    const base = meanOf(baselineRunId);
    const cells: TaskCell[] = runIds.map((id) => {
      const g = perRun.get(id);
      const mean = meanOf(id);
      return {
        runId: id,
        mean,
        rollouts: g?._count._all ?? 0,
        scored: g?._count.reward ?? 0,
        errors: g ? g._count._all - g._count.reward : 0,
        delta: id === baselineRunId || mean === null || base === null ? null : mean - base,
      };
    });
    const deltas = cells.flatMap((c) => (c.delta === null ? [] : [c.delta]));
    const shownBy = perRun.has(baselineRunId) ? baselineRunId : runIds.find((id) => perRun.has(id))!;
    const task = taskOf.get(`${shownBy}\u0000${taskIndex}`) ?? null;
    const canon = JSON.stringify(task);
    return {
      taskIndex,
      task,
      taskDiffers: runIds.some((id) => perRun.has(id) && JSON.stringify(taskOf.get(`${id}\u0000${taskIndex}`) ?? null) !== canon),
      cells,
      worstDelta: deltas.length ? Math.min(...deltas) : null,
    };
  });

  // Regressions first: the most negative delta on top; rows no run can be compared on go last.
  rows.sort((a, b) => {
    if (a.worstDelta === null || b.worstDelta === null) {
      return a.worstDelta === b.worstDelta ? a.taskIndex - b.taskIndex : a.worstDelta === null ? 1 : -1;
    }
    return a.worstDelta - b.worstDelta || a.taskIndex - b.taskIndex;
  });

  const summary: RunTaskSummary[] = runIds.map((id, i) => {
    const cells = rows.map((r) => r.cells[i]!).filter((c) => c.rollouts > 0);
    const compared = rows.map((r) => r.cells[i]!.delta).filter((d): d is number => d !== null);
    return {
      runId: id,
      step: stepOf(id),
      tasks: cells.length,
      regressions: compared.filter((d) => d < -EPSILON).length,
      improvements: compared.filter((d) => d > EPSILON).length,
      unchanged: compared.filter((d) => Math.abs(d) <= EPSILON).length,
      incomparable: id === baselineRunId ? 0 : rows.length - compared.length,
    };
  });

  return { split, rows, summary };
}

export async function compareRuns(db: DbOrTx, workspaceId: string, input: CompareInput) {
  checkInput(input);
  const { runIds, baselineRunId } = input;
  const found = await db.run.findMany({
    where: { id: { in: runIds }, workspaceId },
    include: {
      experiment: { select: { id: true, name: true } },
      version: { select: { id: true, number: true, files: true } },
      createdBy: { select: { id: true, name: true, email: true } },
      steps: { orderBy: { step: "asc" } },
    },
  });
  // Another workspace's run reads exactly like one that does not exist.
  const missing = runIds.filter((id) => !found.some((r) => r.id === id));
  if (missing.length > 0) throw new AppError("NOT_FOUND", `${missing.length > 1 ? "runs" : "run"} ${missing.join(", ")} not found`);
  const byId = new Map(found.map((r) => [r.id, r]));
  const ordered = runIds.map((id) => byId.get(id)!);

  const evalEvents = await db.runEvent.findMany({
    where: { runId: { in: runIds }, type: "eval.finished" },
    orderBy: [{ runId: "asc" }, { seq: "asc" }],
    select: { runId: true, payload: true },
  });
  const tasks = await perTaskDeltas(db, runIds, baselineRunId);

  return {
    baselineRunId,
    runs: ordered.map((r) => ({
      id: r.id,
      number: r.number,
      kind: fromDbKind(r.kind),
      status: r.status,
      error: r.error,
      diagnostics: (Array.isArray(r.diagnostics) ? r.diagnostics : []) as Diagnostic[],
      experiment: r.experiment,
      version: { id: r.version.id, number: r.version.number },
      createdBy: r.createdBy,
      baseModel: r.baseModel,
      evalModel: r.evalModel,
      /** contracts/mean-reward.ts: the same number as the run page's and the runs table's. */
      rewardMean: meanRewardOf(r),
      seed: r.seed,
      createdAt: r.createdAt,
      finishedAt: r.finishedAt,
      config: r.config as unknown as RunConfig,
      files: parseStoredFiles(r.version.files),
      steps: r.steps.map((s) => s.metrics as unknown as StepMetrics),
      evals: evalEvents.filter((e) => e.runId === r.id).map((e) => e.payload as unknown as EvalMetrics),
    })),
    configDiff: diffConfigs(ordered.map((r) => r.config)),
    tasks,
  };
}

export type CompareResult = Awaited<ReturnType<typeof compareRuns>>;
