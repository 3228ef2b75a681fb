/**
 * Fork and re-run. `openFork` puts a run's exact files back in its experiment's editor as a new version (the
 * starting point to edit); starting from there passes `fork` to runs.start, and `resolveFork` decides what
 * the new run starts from:
 *   - a checkpoint step, train run → the runner's `init_from`: the new run's adapter starts from the parent's
 *     checkpoint (its first step samples from `<parent>@<step>`). Adapter weights only by default: the issue
 *     asks for optimizer state "where it is the same run's", which is what resume (same run) does; a fork is a
 *     new run whose config may differ, so AdamW's moments come along only when the user asks (loadOptimizer).
 *   - a checkpoint step, eval run → it evaluates that checkpoint (evalModel `<parent>@<step>`).
 *   - no step → a re-run from the base model (an eval re-run evaluates what its parent evaluated).
 * Either way the new run records parentRunId/parentStep, and both run pages show the lineage.
 */
import {
  checkpointModelName,
  findKeyOffset,
  offsetToPosition,
  type Diagnostic,
  type ExperimentFiles,
  type InitFrom,
  type RunConfig,
  type RunKind,
} from "@contracts";
import { AppError } from "@/server/errors";
import { parseStoredFiles, saveVersion } from "@/features/experiments/server";
import { fromDbKind } from "@/server/run-convert";
import type { Db, DbOrTx } from "@/server/db-types";

export type ForkInput = {
  parentRunId: string;
  /** A checkpoint step of the parent; absent = re-run from the base model. */
  parentStep?: number;
  /** Train forks: also restore the parent's optimizer state (default: adapter weights only). */
  loadOptimizer?: boolean;
};

/** What a start needs from a fork: what to record, where to run, and what to tell the runner. */
export type ResolvedFork = {
  parentRunId: string;
  parentStep: number | null;
  /** The runner that holds the parent's checkpoints (null: any runner, a re-run needs none of its files). */
  runnerId: string | null;
  initFrom?: InitFrom;
  evalModel?: string;
  parent: { number: number; baseModel: string; config: RunConfig };
};

const listSteps = (steps: number[]) => (steps.length > 0 ? `its checkpoints: ${steps.join(", ")}` : "it has no checkpoints");

async function findParent(db: DbOrTx, workspaceId: string, runId: string, field: string) {
  const run = await db.run.findFirst({
    where: { id: runId, workspaceId },
    select: {
      id: true,
      number: true,
      kind: true,
      runnerId: true,
      baseModel: true,
      evalModel: true,
      config: true,
      experimentId: true,
      version: { select: { number: true, files: true } },
      checkpoints: { select: { step: true }, orderBy: { step: "asc" } },
    },
  });
  // Another workspace's run reads exactly like one that does not exist.
  if (!run) throw new AppError("NOT_FOUND", `${field}: run ${runId} not found`);
  // An ART run's code is its client's, not in Rollbook: its files are a placeholder that plays nothing.
  if (run.kind === "art" || run.kind === "tinker") {
    throw new AppError("BAD_INPUT", `${field}: run #${run.number} is ${run.kind === "art" ? "an ART" : "a Tinker"} client's run; its code lives with its client, so it cannot be forked or re-run here`);
  }
  return run;
}

type Parent = Awaited<ReturnType<typeof findParent>>;

function requireCheckpoint(parent: Parent, step: number, field: string): void {
  if (parent.checkpoints.some((c) => c.step === step)) return;
  const why = parent.kind === "train" ? listSteps(parent.checkpoints.map((c) => c.step)) : `it is a ${fromDbKind(parent.kind)} run, which trains no checkpoints`;
  throw new AppError("BAD_INPUT", `${field}: run #${parent.number} has no checkpoint at step ${step} (${why})`);
}

/**
 * Open a run (or one of its checkpoints) as the starting point of a new run: its exact files become the
 * experiment's newest version (no new version when they already are), marked as restored from the run's
 * version, so the editor opens on them.
 */
export async function openFork(db: Db, workspaceId: string, input: { runId: string; step?: number }, userId: string | null) {
  const parent = await findParent(db, workspaceId, input.runId, "runId");
  if (input.step !== undefined) requireCheckpoint(parent, input.step, "step");
  const files: ExperimentFiles = parseStoredFiles(parent.version.files);
  // No baseVersion: opening a fork deliberately puts the run's files on top of whatever is newest (a restore).
  const saved = await saveVersion(db, workspaceId, parent.experimentId, files, { createdById: userId, restoredFrom: parent.version.number });
  return {
    experimentId: parent.experimentId,
    versionNumber: saved.number,
    files,
    parent: { runId: parent.id, number: parent.number, kind: fromDbKind(parent.kind), step: input.step ?? null },
  };
}

/** Check a fork before anything is written; throws NOT_FOUND / BAD_INPUT naming the field. */
export async function resolveFork(
  db: DbOrTx,
  workspaceId: string,
  input: { kind: RunKind; evalModel?: string; fork: ForkInput },
): Promise<ResolvedFork> {
  const { fork } = input;
  const parent = await findParent(db, workspaceId, fork.parentRunId, "fork.parentRunId");
  const base = {
    parentRunId: parent.id,
    parentStep: fork.parentStep ?? null,
    parent: { number: parent.number, baseModel: parent.baseModel, config: parent.config as unknown as RunConfig },
  };
  if (fork.loadOptimizer && (input.kind !== "train" || fork.parentStep === undefined)) {
    throw new AppError("BAD_INPUT", "fork.loadOptimizer: only a train run forked from a checkpoint restores optimizer state");
  }
  if (fork.parentStep === undefined) {
    // A re-run: same files, fresh start. An eval re-run evaluates what its parent evaluated unless told otherwise.
    const evalModel = input.kind === "eval" && parent.kind === "eval" && !input.evalModel ? (parent.evalModel ?? undefined) : undefined;
    return { ...base, runnerId: null, ...(evalModel ? { evalModel } : {}) };
  }
  const step = fork.parentStep;
  requireCheckpoint(parent, step, "fork.parentStep");
  // The checkpoint lives on the runner that trained it.
  if (!parent.runnerId) throw new AppError("BAD_INPUT", `fork.parentRunId: run #${parent.number} never reached a runner, so its checkpoints are nowhere`);
  const model = checkpointModelName(parent.id, step);
  if (input.kind === "train") {
    return { ...base, runnerId: parent.runnerId, initFrom: { run_id: parent.id, step, load_optimizer: fork.loadOptimizer ?? false } };
  }
  if (input.kind === "eval") {
    if (input.evalModel && input.evalModel !== model) {
      throw new AppError("BAD_INPUT", `evalModel: a fork of run #${parent.number} at step ${step} evaluates ${model}, not ${input.evalModel}`);
    }
    return { ...base, runnerId: parent.runnerId, evalModel: model };
  }
  throw new AppError("BAD_INPUT", "fork.parentStep: a dry run samples the base model; fork a checkpoint into a train or eval run, or re-run without a step");
}

/**
 * Problems with the new run's config.json for this fork, at their lines: a checkpoint's adapter only fits the
 * base model it was trained on, and a train fork keeps the parent's LoRA shape (rank, alpha, target modules).
 * The engine checks the same against the checkpoint's own files; this answers before anything starts.
 */
export function forkConfigDiagnostics(fork: ResolvedFork, kind: RunKind, config: RunConfig, configText: string): Diagnostic[] {
  if (fork.parentStep === null) return [];
  const at = (path: string[], message: string): Diagnostic => {
    const offset = findKeyOffset(configText, path);
    const pos = offset === undefined ? { line: 1, column: 1 } : offsetToPosition(configText, offset);
    return { file: "config.json", ...pos, message, severity: "error" };
  };
  const out: Diagnostic[] = [];
  const from = `run #${fork.parent.number} @ step ${fork.parentStep}`;
  if (config.model !== fork.parent.baseModel) {
    out.push(at(["model"], `model: ${from} was trained on ${fork.parent.baseModel}; its adapter does not fit ${config.model}`));
  }
  if (kind !== "train") return out;
  const was = fork.parent.config.trainer;
  const now = config.trainer;
  const same = (a: readonly string[], b: readonly string[]) => [...a].sort().join("\n") === [...b].sort().join("\n");
  if (was.lora_rank !== now.lora_rank) out.push(at(["trainer", "lora_rank"], `trainer.lora_rank: ${from} has rank ${was.lora_rank}; a fork keeps the parent's LoRA shape`));
  if (was.lora_alpha !== now.lora_alpha) out.push(at(["trainer", "lora_alpha"], `trainer.lora_alpha: ${from} has alpha ${was.lora_alpha}; a fork keeps the parent's LoRA shape`));
  if (!same(was.lora_target_modules, now.lora_target_modules)) {
    out.push(at(["trainer", "lora_target_modules"], `trainer.lora_target_modules: ${from} adapts ${was.lora_target_modules.join(", ")}; a fork keeps the parent's LoRA shape`));
  }
  return out;
}

/**
 * The run itself (number, kind, checkpoint steps: what a fork of it can start from), its parent if forked,
 * and the runs forked from it, newest first — for both run pages and the editor's fork banner.
 */
export async function runLineage(db: DbOrTx, workspaceId: string, runId: string) {
  const run = await db.run.findFirst({
    where: { id: runId, workspaceId },
    select: {
      id: true,
      number: true,
      kind: true,
      experimentId: true,
      checkpoints: { select: { step: true }, orderBy: { step: "asc" } },
      parentStep: true,
      parent: { select: { id: true, number: true, kind: true, workspaceId: true } },
      forks: {
        where: { workspaceId },
        orderBy: { createdAt: "desc" },
        take: 100,
        select: { id: true, number: true, kind: true, status: true, parentStep: true, createdAt: true },
      },
    },
  });
  if (!run) throw new AppError("NOT_FOUND", `run ${runId} not found`);
  const parent = run.parent && run.parent.workspaceId === workspaceId ? run.parent : null;
  return {
    run: { id: run.id, number: run.number, kind: fromDbKind(run.kind), experimentId: run.experimentId, checkpointSteps: run.checkpoints.map((c) => c.step) },
    parent: parent ? { id: parent.id, number: parent.number, kind: fromDbKind(parent.kind), step: run.parentStep } : null,
    forks: run.forks.map((f) => ({ id: f.id, number: f.number, kind: fromDbKind(f.kind), status: f.status, step: f.parentStep, createdAt: f.createdAt })),
  };
}
