/**
 * Executes one run — dry-run, train or eval — as a sequence of events in its log. Train: for each step,
 * groups_per_step tasks (seeded epochs) × rollouts_per_group rollouts with bounded concurrency, sampled
 * from the previous step's checkpoint; failed rollouts are recorded and left out of training; the engine
 * trains one GRPO step and saves checkpoint <step>; validation every eval_every steps (and at step 0 and
 * after the last). Resume continues after the engine's newest checkpoint with the same task order.
 */
import {
  type CheckpointInfo,
  type RunConfig,
  type RunKind,
  type TrainGroup,
  type TrainMetrics,
} from "../../contracts";
import { type CompiledExperiment } from "../experiment/compile";
import { type TaskRow } from "../experiment/tasks";
import { type EngineClient } from "../engine/client";
import { type RunEventInput } from "../events/event-log";
import { executeRollout, type ExecutedRollout } from "../rollout/execute";
import { deriveSeed } from "../rollout/seed";
import { computeEvalMetrics, computeStepMetrics } from "./metrics";
import { mapConcurrent } from "./pool";
import { tasksForStep } from "./schedule";

export type RunEngine = Pick<EngineClient, "chat" | "train" | "latestStep">;

export interface RunContext {
  runId: string;
  kind: RunKind;
  config: RunConfig;
  compiled: CompiledExperiment;
  tasks: { train: TaskRow[]; val: TaskRow[] };
  /** Eval runs: `<run>@<step>` or a base model id; absent = config.model. */
  evalModel?: string;
  resume: boolean;
  engine: RunEngine;
  /** Resolves when the engine can serve (waits through a restart). */
  waitForEngine: () => Promise<void>;
  emit: (event: RunEventInput) => void;
  signal: AbortSignal;
  /** Called when a step starts, for status(). */
  onStep?: (step: number) => void;
}

export class RunStopped extends Error {
  constructor() {
    super("run stopped");
    this.name = "RunStopped";
  }
}

export const checkpointModel = (runId: string, step: number) => `${runId}@${step}`;

/** Parse `<run>@<step>` (the step an eval is labelled with); other ids are base models, step 0. */
export function modelStep(model: string): number {
  const m = /@(\d+)$/.exec(model);
  return m ? Number(m[1]) : 0;
}

function checkStopped(signal: AbortSignal): void {
  if (signal.aborted) throw new RunStopped();
}

interface RolloutJob {
  task: TaskRow;
  group: number;
  rolloutIndex: number;
}

/** Run a batch of rollouts, emitting each as it finishes; aborted rollouts are not emitted. */
async function runRollouts(
  ctx: RunContext,
  jobs: readonly RolloutJob[],
  opts: { step: number; split: "train" | "val"; model: string; idPrefix: string; temperature?: number },
): Promise<ExecutedRollout[]> {
  const results = await mapConcurrent(
    jobs,
    ctx.config.max_concurrency,
    async (job) => {
      const done = await executeRollout({
        engine: ctx.engine,
        compiled: ctx.compiled,
        runId: ctx.runId,
        config: ctx.config,
        task: job.task,
        split: opts.split,
        step: opts.step,
        group: job.group,
        rolloutIndex: job.rolloutIndex,
        model: opts.model,
        samplingOverrides: opts.temperature === undefined ? undefined : { temperature: opts.temperature },
        idPrefix: opts.idPrefix,
        signal: ctx.signal,
      });
      if (!ctx.signal.aborted) ctx.emit({ type: "rollout.finished", payload: done.trajectory });
      return done;
    },
    ctx.signal,
  );
  checkStopped(ctx.signal);
  return results;
}

async function runEval(ctx: RunContext, step: number, model: string): Promise<void> {
  const jobs = ctx.tasks.val.map((task) => ({ task, group: task.index, rolloutIndex: 0 }));
  if (jobs.length === 0) return;
  const done = await runRollouts(ctx, jobs, {
    step,
    split: "val",
    model,
    idPrefix: "eval",
    temperature: ctx.config.eval_temperature,
  });
  ctx.emit({ type: "eval.finished", payload: computeEvalMetrics(step, model, done.map((d) => d.trajectory)) });
}

function groupJobs(ctx: RunContext, step: number): RolloutJob[] {
  const { config, tasks } = ctx;
  return tasksForStep(step, config.groups_per_step, tasks.train.length, config.seed).flatMap(({ group, taskIndex }) =>
    Array.from({ length: config.rollouts_per_group }, (_, r) => ({
      task: tasks.train[taskIndex] as TaskRow,
      group,
      rolloutIndex: r,
    })),
  );
}

function byGroup(done: readonly ExecutedRollout[], groups: number): ExecutedRollout[][] {
  const out: ExecutedRollout[][] = Array.from({ length: groups }, () => []);
  for (const d of done) out[d.trajectory.group]?.push(d);
  return out;
}

async function trainStep(
  ctx: RunContext,
  step: number,
  groups: readonly ExecutedRollout[][],
): Promise<{ metrics: TrainMetrics; checkpoint: CheckpointInfo }> {
  // Only valid samples train; a group needs two of them for a relative advantage.
  const trainGroups: TrainGroup[] = groups
    .map((g) => ({ samples: g.flatMap((d) => (d.sample ? [d.sample] : [])) }))
    .filter((g) => g.samples.length >= 2);
  let result: { metrics: TrainMetrics; checkpoint: CheckpointInfo } | null = null;
  // Training is not aborted by stop(): a step in progress finishes and saves its checkpoint, so the run
  // stops on a consistent checkpoint boundary.
  for await (const line of ctx.engine.train({
    run_id: ctx.runId,
    step,
    base_model: ctx.config.model,
    seed: deriveSeed(ctx.config.seed, "train", step),
    config: ctx.config.trainer,
    groups: trainGroups,
  })) {
    if (line.type === "progress") {
      ctx.emit({
        type: "train.progress",
        payload: { step, micro_batch: line.micro_batch, micro_batches: line.micro_batches, loss: line.loss },
      });
    } else if (line.type === "result") {
      result = { metrics: line.metrics, checkpoint: line.checkpoint };
    } else {
      throw new Error(`training step ${step} failed: ${line.message}`);
    }
  }
  if (!result) throw new Error(`training step ${step}: the engine ended the stream without a result`);
  return result;
}

async function sampleStep(ctx: RunContext, step: number, model: string) {
  const t0 = performance.now();
  const done = await runRollouts(ctx, groupJobs(ctx, step), { step, split: "train", model, idPrefix: "s" });
  // The engine unreachable for a whole step is an outage, not data: fail (resumable) instead of training
  // an empty step and advancing the checkpoint.
  const modelErrors = done.filter((d) => d.trajectory.error?.kind === "model");
  if (done.length > 0 && modelErrors.length === done.length) {
    throw new Error(`every rollout of step ${step} failed to reach the model: ${modelErrors[0]!.trajectory.error!.message}`);
  }
  const groups = byGroup(done, ctx.config.groups_per_step);
  const untrainable = groups.filter((g) => g.filter((d) => d.sample).length < 2).length;
  if (untrainable > 0 && ctx.kind === "train") {
    ctx.emit({
      type: "run.log",
      payload: {
        level: "warn",
        message: `step ${step}: ${untrainable} of ${groups.length} groups have fewer than 2 valid rollouts and are not trained`,
      },
    });
  }
  return { groups, rolloutS: (performance.now() - t0) / 1000, t0 };
}

async function runDry(ctx: RunContext): Promise<void> {
  const model = ctx.config.model;
  ctx.emit({ type: "run.started", payload: { kind: ctx.kind, config: ctx.config, model, resumed_from_step: 0 } });
  await ctx.waitForEngine();
  ctx.onStep?.(1);
  const { groups, rolloutS, t0 } = await sampleStep(ctx, 1, model);
  const trajectories = groups.map((g) => g.map((d) => d.trajectory));
  ctx.emit({
    type: "step.finished",
    payload: computeStepMetrics(1, trajectories, null, { rolloutS, trainS: 0, stepS: (performance.now() - t0) / 1000 }),
  });
}

async function runEvalOnly(ctx: RunContext): Promise<void> {
  const model = ctx.evalModel ?? ctx.config.model;
  ctx.emit({ type: "run.started", payload: { kind: ctx.kind, config: ctx.config, model, resumed_from_step: 0 } });
  await ctx.waitForEngine();
  const step = modelStep(model);
  ctx.onStep?.(step);
  await runEval(ctx, step, model);
}

async function runTrain(ctx: RunContext): Promise<void> {
  const { config, runId } = ctx;
  await ctx.waitForEngine();
  // The engine's newest checkpoint is the truth about how far training got (events may be ahead of it
  // when the runner died mid-step: that step is redone with the same tasks and seeds).
  const newest = await ctx.engine.latestStep(runId);
  if (!ctx.resume && newest > 0) {
    throw new Error(`the engine already has checkpoints of run ${runId} (newest ${newest}): resume it or use a new run id`);
  }
  const resumedFrom = ctx.resume ? newest : 0;
  ctx.emit({
    type: "run.started",
    payload: { kind: ctx.kind, config, model: config.model, resumed_from_step: resumedFrom },
  });
  if (resumedFrom > 0) {
    ctx.emit({ type: "run.log", payload: { level: "info", message: `resuming after checkpoint ${resumedFrom}` } });
  }
  const evalOn = config.eval_every > 0 && ctx.tasks.val.length > 0;
  if (evalOn && resumedFrom === 0) await runEval(ctx, 0, config.model);

  for (let step = resumedFrom + 1; step <= config.num_steps; step++) {
    checkStopped(ctx.signal);
    await ctx.waitForEngine();
    ctx.onStep?.(step);
    const model = step === 1 ? config.model : checkpointModel(runId, step - 1);
    const { groups, rolloutS, t0 } = await sampleStep(ctx, step, model);
    const t1 = performance.now();
    const { metrics, checkpoint } = await trainStep(ctx, step, groups);
    const trainS = (performance.now() - t1) / 1000;
    ctx.emit({ type: "checkpoint.saved", payload: checkpoint });
    const trajectories = groups.map((g) => g.map((d) => d.trajectory));
    ctx.emit({
      type: "step.finished",
      payload: computeStepMetrics(step, trajectories, metrics, {
        rolloutS,
        trainS,
        stepS: (performance.now() - t0) / 1000,
      }),
    });
    checkStopped(ctx.signal);
    if (evalOn && (step % config.eval_every === 0 || step === config.num_steps)) {
      await runEval(ctx, step, checkpointModel(runId, step));
    }
  }
}

/**
 * Execute the run to its end and emit run.finished exactly once: completed, stopped (signal aborted) or
 * failed (any unexpected error, with its message). Never throws.
 */
export async function executeRun(ctx: RunContext): Promise<"completed" | "stopped" | "failed"> {
  let status: "completed" | "stopped" | "failed" = "completed";
  let error: string | null = null;
  try {
    if (ctx.kind === "train") await runTrain(ctx);
    else if (ctx.kind === "dry-run") await runDry(ctx);
    else await runEvalOnly(ctx);
    checkStopped(ctx.signal);
  } catch (err) {
    if (ctx.signal.aborted || err instanceof RunStopped) {
      status = "stopped";
    } else {
      status = "failed";
      error = err instanceof Error ? err.message : String(err);
    }
  }
  ctx.emit({ type: "run.finished", payload: { status, error, diagnostics: [] } });
  return status;
}

