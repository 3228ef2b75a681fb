/**
 * Executes one run — dry-run, train or eval — as a sequence of events in its log. Train: for each step,
 * groups_per_step tasks (seeded epochs) × rollouts_per_group rollouts with bounded concurrency, sampled
 * from the previous step's checkpoint; failed rollouts are recorded and left out of training; the engine
 * trains one GRPO step and saves checkpoint <step>; validation every eval_every steps (and at step 0 and
 * after the last). Resume continues after the engine's newest checkpoint with the same task order.
 */
import {
  type CheckpointInfo,
  type InitFrom,
  type RunConfig,
  type RunKind,
  type TrainGroup,
  type TrainedTokens,
  type TokenSequence,
  type TrainMetrics,
  type RunEvent,
  type Trajectory,
  checkpointModelName,
  parseCheckpointModel,
} from "../../../contracts";
import { type CompiledExperiment } from "../experiment/compile";
import { type TaskRow } from "../experiment/tasks";
import { type EngineClient } from "../engine/client";
import { type EngineWatch, isTransportFailure, restartCause, restartSince } from "../engine/restart-recovery";
import { type RunEventInput } from "../events/event-log";
import type { JudgeClient } from "../judge/judge-client";
import { executeRollout, type ExecutedRollout, type RolloutServices } from "../rollout/execute";
import { NO_MCP, type RunMcp } from "../rollout/run-mcp";
import { buildSequences } from "../rollout/training-sample";
import { deriveSeed } from "../rollout/seed";
import type { ExperimentExports } from "../sandbox/inspect";
import { applyGroupReward } from "./group-reward";
import { initFromModel, initFromProblem } from "./init-from";
import { EmptyStepGuard } from "./empty-steps";
import { computeEvalMetrics, computeStepMetrics } from "./metrics";
import { mapConcurrent } from "./pool";
import { tasksForStep } from "./schedule";
import type { FairQueue } from "../engine/fair-queue";

export type RunEngine = Pick<EngineClient, "chat" | "train" | "latestStep" | "checkpoints">;

/** The run's MCP servers, connected when the run starts and closed when it ends. */
export interface McpConnection {
  mcp: RunMcp;
  /** One line per server that failed to start ("MCP server 'files' (stdio: …) failed to start: …"). */
  problems: string[];
  /** One line per server that is ready. */
  ready: string[];
  close(): Promise<void>;
}

export interface RunContext {
  runId: string;
  /** The run's workspace: its rollouts compute in that workspace's CPU share (sandbox/cpu/share.ts). */
  workspaceId?: string;
  kind: RunKind;
  config: RunConfig;
  compiled: CompiledExperiment;
  /** What the bundle exports (a groupReward changes how rewards are given). */
  exports: ExperimentExports;
  tasks: { train: TaskRow[]; val: TaskRow[] };
  /** Eval runs: `<run>@<step>` or a base model id; absent = config.model. */
  evalModel?: string;
  resume: boolean;
  /**
   * Resume: what the run's event log already holds, to reconcile it with the engine's checkpoint folder
   * (a checkpoint the engine saved after the runner last logged becomes checkpoint.saved + step.finished).
   */
  logged?: readonly RunEvent[];
  /** Train runs forked from a checkpoint: step 1 samples from it and its adapter is where training starts. */
  initFrom?: InitFrom;
  engine: RunEngine;
  /** The runner's fair queue in front of the engine, shared by every run (absent in tests: none). */
  engineSlots?: FairQueue;
  judge: JudgeClient;
  /** Connects the experiment's MCP servers (absent: the experiment has none). */
  connectMcp?: () => Promise<McpConnection>;
  /** Resolves when the engine can serve (waits through a restart). */
  waitForEngine: () => Promise<void>;
  /** The supervisor's view of the engine: a train step or model call cut by an engine restart is retried once. */
  engineWatch?: EngineWatch;
  emit: (event: RunEventInput) => void;
  signal: AbortSignal;
  /** Called when a step starts, for status(). */
  onStep?: (step: number) => void;
  /** Keeps a finished rollout's exact token sequences (runs/<run>/tokens.jsonl) for exports. */
  recordTokens?: (trajectoryId: string, sequences: TokenSequence[]) => void;
  /**
   * Copies checkpoint <step> to the shared checkpoint folder (ROLLBOOK_SHARED_CHECKPOINT_DIR), before its
   * checkpoint.saved is logged: a checkpoint the web server has recorded is one another runner can reach.
   */
  publishCheckpoint?: (step: number) => Promise<void>;
  /** Keeps what a training step did with each submitted rollout (runs/<run>/train-logprobs.jsonl) for the token view. */
  recordTrainLogprobs?: (step: number, groups: readonly TrainGroup[], trained: Record<string, TrainedTokens>) => void;
}

export class RunStopped extends Error {
  constructor() {
    super("run stopped");
    this.name = "RunStopped";
  }
}

/** The step an eval is labelled with: `<run>@<step>` (contracts/model-ref.ts) is that step; a base model is step 0. */
const modelStep = (model: string): number => parseCheckpointModel(model)?.step ?? 0;

function checkStopped(signal: AbortSignal): void {
  if (signal.aborted) throw new RunStopped();
}

interface RolloutJob {
  task: TaskRow;
  group: number;
  rolloutIndex: number;
}

/**
 * Run a batch of rollouts, emitting each as it finishes; aborted rollouts are not emitted. With a
 * groupReward (training only: a relative score means nothing for one validation rollout), a group's
 * rollouts are scored together as soon as its last one finishes, and emitted then.
 */
/** A failed rollout's sequences, when its turns make whole ones (what it sampled is still worth exporting). */
function sequencesOf(turns: ExecutedRollout["turns"]): TokenSequence[] | null {
  if (turns.length === 0) return null;
  try {
    return buildSequences(turns);
  } catch {
    return null;
  }
}

async function runRollouts(
  ctx: RunContext,
  services: RolloutServices,
  jobs: readonly RolloutJob[],
  opts: { step: number; split: "train" | "val"; model: string; idPrefix: string },
): Promise<ExecutedRollout[]> {
  const byGroupReward = ctx.exports.groupReward && opts.split === "train";
  const placement = ctx.workspaceId === undefined ? undefined : { workspaceId: ctx.workspaceId, runId: ctx.runId };
  const groupSize = new Map<number, number>();
  for (const job of jobs) groupSize.set(job.group, (groupSize.get(job.group) ?? 0) + 1);
  const finished = new Map<number, ExecutedRollout[]>();
  const emit = (done: ExecutedRollout) => {
    if (ctx.signal.aborted) return;
    ctx.emit({ type: "rollout.finished", payload: done.trajectory });
    const sequences = done.sample?.sequences ?? sequencesOf(done.turns);
    if (sequences && ctx.recordTokens) ctx.recordTokens(done.trajectory.id, sequences);
  };
  const results = await mapConcurrent(
    jobs,
    ctx.config.max_concurrency,
    async (job) => {
      const done = await executeRollout({
        services,
        compiled: ctx.compiled,
        runId: ctx.runId,
        placement,
        config: ctx.config,
        task: job.task,
        split: opts.split,
        step: opts.step,
        group: job.group,
        rolloutIndex: job.rolloutIndex,
        model: opts.model,
        idPrefix: opts.idPrefix,
        signal: ctx.signal,
      });
      if (!byGroupReward) {
        emit(done);
        return done;
      }
      const group = finished.get(job.group) ?? [];
      group.push(done);
      finished.set(job.group, group);
      if (group.length === groupSize.get(job.group)) {
        group.sort((a, b) => a.trajectory.id.localeCompare(b.trajectory.id, "en", { numeric: true }));
        if (!ctx.signal.aborted) await applyGroupReward({ compiled: ctx.compiled, config: ctx.config, services, task: job.task, rollouts: group, signal: ctx.signal, placement });
        group.forEach(emit);
      }
      return done;
    },
    ctx.signal,
  );
  checkStopped(ctx.signal);
  return results;
}

async function runEval(ctx: RunContext, services: RolloutServices, step: number, model: string): Promise<void> {
  const jobs = ctx.tasks.val.map((task) => ({ task, group: task.index, rolloutIndex: 0 }));
  if (jobs.length === 0) return;
  // Decoding (config.eval_temperature, greedy by default) is fixed in executeRollout for the "val" split.
  const done = await runRollouts(ctx, services, jobs, { step, split: "val", model, idPrefix: "eval" });
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
    // Only the first step reads it: later steps continue from this run's own checkpoints.
    ...(step === 1 && ctx.initFrom ? { init_from: ctx.initFrom } : {}),
  })) {
    if (line.type === "progress") {
      ctx.emit({
        type: "train.progress",
        payload: { step, micro_batch: line.micro_batch, micro_batches: line.micro_batches, loss: line.loss },
      });
    } else if (line.type === "result") {
      result = { metrics: line.metrics, checkpoint: line.checkpoint };
      ctx.recordTrainLogprobs?.(step, trainGroups, line.token_logprobs);
    } else {
      throw new TrainStepFailed(`training step ${step} failed: ${line.message}`);
    }
  }
  if (!result) throw new Error(`training step ${step}: the engine ended the stream without a result`);
  return result;
}

/** The engine trained the step and said it failed (an answer, not a lost connection): never retried. */
class TrainStepFailed extends Error {}

/**
 * A train step that survives one engine restart. Idempotent by run and step: the engine trains step N only
 * when its newest checkpoint is N − 1 (else 409), so after a restart the checkpoint folder says whether the
 * step was saved before the engine died (then that checkpoint is the step's, its trainer numbers lost) or
 * not (then it is trained once more, on the same groups). Never trained twice; a second failure fails the
 * run with both causes.
 */
async function trainStepSurvivingRestart(
  ctx: RunContext,
  step: number,
  groups: readonly ExecutedRollout[][],
): Promise<{ metrics: TrainMetrics | null; checkpoint: CheckpointInfo }> {
  const watch = ctx.engineWatch;
  const since = watch?.restarts() ?? 0;
  try {
    return await trainStep(ctx, step, groups);
  } catch (err) {
    if (!watch || err instanceof TrainStepFailed || ctx.signal.aborted || !isTransportFailure(err)) throw err;
    const restart = await restartSince(watch, since, ctx.signal);
    if (!restart) throw err;
    const cause = restartCause(restart);
    const saved = (await ctx.engine.checkpoints(ctx.runId)).find((c) => c.step === step);
    if (saved) {
      ctx.emit({ type: "run.log", payload: { level: "warn", message: `step ${step}: ${cause}; checkpoint ${step} was saved before it died and is kept (the trainer's metrics of this step are lost)` } });
      return { metrics: null, checkpoint: saved };
    }
    ctx.emit({ type: "run.log", payload: { level: "warn", message: `step ${step}: ${cause}; training step ${step} again on the same rollouts` } });
    try {
      return await trainStep(ctx, step, groups);
    } catch (retryErr) {
      if (ctx.signal.aborted) throw retryErr;
      throw new Error(`training step ${step}: ${cause}; trained again, it failed too: ${retryErr instanceof Error ? retryErr.message : String(retryErr)}`);
    }
  }
}

async function sampleStep(ctx: RunContext, services: RolloutServices, step: number, model: string) {
  const t0 = performance.now();
  const done = await runRollouts(ctx, services, groupJobs(ctx, step), { step, split: "train", model, idPrefix: "s" });
  // The engine unreachable for a whole step is an outage, not data: fail (resumable) instead of training
  // an empty step and advancing the checkpoint.
  const modelErrors = done.filter((d) => d.trajectory.error?.kind === "model" || d.trajectory.error?.kind === "engine_connection");
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

async function runDry(ctx: RunContext, services: RolloutServices): Promise<void> {
  await ctx.waitForEngine();
  ctx.onStep?.(1);
  const { groups, rolloutS, t0 } = await sampleStep(ctx, services, 1, ctx.config.model);
  const trajectories = groups.map((g) => g.map((d) => d.trajectory));
  ctx.emit({
    type: "step.finished",
    payload: computeStepMetrics(1, trajectories, null, { rolloutS, trainS: 0, stepS: (performance.now() - t0) / 1000 }),
  });
}

async function runEvalOnly(ctx: RunContext, services: RolloutServices): Promise<void> {
  const model = ctx.evalModel ?? ctx.config.model;
  await ctx.waitForEngine();
  const step = modelStep(model);
  ctx.onStep?.(step);
  await runEval(ctx, services, step, model);
}

/** Where a train run starts: after the engine's newest checkpoint when resuming, else 0. */
async function trainStart(ctx: RunContext): Promise<number> {
  await ctx.waitForEngine();
  // The engine's newest checkpoint is the truth about how far training got (events may be ahead of it
  // when the runner died mid-step: that step is redone with the same tasks and seeds).
  const newest = await ctx.engine.latestStep(ctx.runId);
  if (!ctx.resume && newest > 0) {
    throw new Error(`the engine already has checkpoints of run ${ctx.runId} (newest ${newest}): resume it or use a new run id`);
  }
  const from = ctx.resume ? newest : 0;
  // A fork that has not trained yet needs its parent's checkpoint; once it has its own, it continues from those.
  if (ctx.initFrom && from === 0) {
    const problem = await initFromProblem(ctx.engine, ctx.initFrom, { strict: true });
    if (problem) throw new Error(problem);
  }
  return from;
}

async function runTrain(ctx: RunContext, services: RolloutServices, resumedFrom: number): Promise<void> {
  const { config, runId } = ctx;
  if (resumedFrom > 0) {
    ctx.emit({ type: "run.log", payload: { level: "info", message: `resuming after checkpoint ${resumedFrom}` } });
  }
  const evalOn = config.eval_every > 0 && ctx.tasks.val.length > 0;
  // Where step 1 samples from: the base model, or a fork's parent checkpoint (step 0's eval measures it too).
  const startModel = ctx.initFrom ? initFromModel(ctx.initFrom) : config.model;
  if (evalOn && resumedFrom === 0) await runEval(ctx, services, 0, startModel);

  const guard = new EmptyStepGuard(config.limits);
  for (let step = resumedFrom + 1; step <= config.num_steps; step++) {
    checkStopped(ctx.signal);
    await ctx.waitForEngine();
    ctx.onStep?.(step);
    const model = step === 1 ? startModel : checkpointModelName(runId, step - 1);
    const { groups, rolloutS, t0 } = await sampleStep(ctx, services, step, model);
    const empty = guard.check(step, groups.map((g) => g.map((d) => d.trajectory)));
    if (empty) {
      // The step's record says what it sampled; nothing is trained or checkpointed.
      const trajectories = groups.map((g) => g.map((d) => d.trajectory));
      ctx.emit({ type: "step.finished", payload: computeStepMetrics(step, trajectories, null, { rolloutS, trainS: 0, stepS: (performance.now() - t0) / 1000 }) });
      throw new Error(empty);
    }
    const t1 = performance.now();
    const { metrics, checkpoint } = await trainStepSurvivingRestart(ctx, step, groups);
    const trainS = (performance.now() - t1) / 1000;
    if (ctx.publishCheckpoint) {
      // A failed copy does not stop training (the checkpoint is safe here); it only limits where the run can move.
      await ctx.publishCheckpoint(step).catch((err: unknown) =>
        ctx.emit({ type: "run.log", payload: { level: "warn", message: `checkpoint ${step}: copying it to the shared checkpoint folder failed: ${err instanceof Error ? err.message : String(err)}` } }),
      );
    }
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
      await runEval(ctx, services, step, checkpointModelName(runId, step));
    }
  }
}

/**
 * The runner can die after the engine saved checkpoint N and before it logged checkpoint.saved N and
 * step.finished N. Resume trains on from the engine's newest checkpoint (N), so without this step N would
 * be missing from the record for good while later steps train from it. Why record it rather than redo it:
 * the checkpoint on disk was trained on exactly the rollouts of step N already in the log (sampling is
 * finished, and every rollout appended, before /train is called), so its record can be rebuilt truthfully:
 * checkpoint.saved from the engine's listing, step.finished from the step's logged rollouts (the latest
 * attempt of each id). Only the trainer's own numbers of that step are gone (trainer: null), and a warning
 * says so. Redoing it would need the engine to discard a checkpoint, which it never does.
 */
async function reconcileWithCheckpoints(ctx: RunContext, resumedFrom: number): Promise<void> {
  if (!ctx.resume || resumedFrom === 0 || !ctx.logged) return;
  const loggedCheckpoints = new Set<number>();
  const loggedSteps = new Set<number>();
  const latest = new Map<string, Trajectory>();
  for (const e of ctx.logged) {
    if (e.type === "checkpoint.saved") loggedCheckpoints.add(e.payload.step);
    else if (e.type === "step.finished") loggedSteps.add(e.payload.step);
    else if (e.type === "rollout.finished" && e.payload.split === "train") latest.set(e.payload.id, e.payload);
  }
  const missing: number[] = [];
  for (let s = 1; s <= resumedFrom; s++) if (!loggedCheckpoints.has(s) || !loggedSteps.has(s)) missing.push(s);
  if (missing.length === 0) return;
  const onEngine = new Map((await ctx.engine.checkpoints(ctx.runId)).map((c) => [c.step, c]));
  for (const step of missing) {
    const info = onEngine.get(step);
    if (!loggedCheckpoints.has(step) && info) ctx.emit({ type: "checkpoint.saved", payload: info });
    const rollouts = [...latest.values()].filter((t) => t.step === step);
    if (!loggedSteps.has(step)) {
      const groups: Trajectory[][] = Array.from({ length: ctx.config.groups_per_step }, () => []);
      for (const t of rollouts) (groups[t.group] ??= []).push(t);
      ctx.emit({ type: "step.finished", payload: computeStepMetrics(step, groups, null, { rolloutS: 0, trainS: 0, stepS: 0 }) });
    }
    ctx.emit({
      type: "run.log",
      payload: {
        level: "warn",
        message:
          `step ${step}: the engine saved checkpoint ${step} but the runner stopped before logging it; recorded now from the engine's ` +
          `checkpoint folder and the step's ${rollouts.length} logged rollouts (the trainer's metrics of that step are lost)`,
      },
    });
  }
}

/** Counts the rollouts of the split a run is for (train for train and dry runs, val for evals). */
class RolloutOutcomes {
  private total = 0;
  private failed = 0;
  private readonly errors = new Map<string, number>();
  constructor(private readonly split: "train" | "val") {}

  add(t: { split: "train" | "val"; error: { kind: string; message: string } | null }): void {
    if (t.split !== this.split) return;
    this.total++;
    if (!t.error) return;
    this.failed++;
    const key = `${t.error.kind}: ${t.error.message.length > 300 ? `${t.error.message.slice(0, 300)}…` : t.error.message}`;
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
  }

  /** null unless there were rollouts and all of them failed; then why, with the most frequent error. */
  everyOneFailed(): string | null {
    if (this.total === 0 || this.failed < this.total) return null;
    const [top, count] = [...this.errors].sort((a, b) => b[1] - a[1])[0]!;
    return `every ${this.split === "val" ? "validation " : ""}rollout failed (${this.total} of ${this.total}); most often (${count}×) ${top}`;
  }
}

/**
 * Execute the run to its end and emit run.finished exactly once: completed, stopped (signal aborted) or
 * failed (any unexpected error, with its message, or every rollout of the run failed). Never throws.
 */
export async function executeRun(runCtx: RunContext): Promise<"completed" | "stopped" | "failed"> {
  let status: "completed" | "stopped" | "failed" = "completed";
  let error: string | null = null;
  let connection: McpConnection | undefined;
  const outcomes = new RolloutOutcomes(runCtx.kind === "eval" ? "val" : "train");
  const ctx: RunContext = {
    ...runCtx,
    emit: (event) => {
      if (event.type === "rollout.finished") outcomes.add(event.payload);
      runCtx.emit(event);
    },
  };
  try {
    const resumedFrom = ctx.kind === "train" ? await trainStart(ctx) : 0;
    const model = ctx.kind === "eval" ? (ctx.evalModel ?? ctx.config.model) : ctx.config.model;
    const initFrom = ctx.kind === "train" && ctx.initFrom ? { init_from: ctx.initFrom } : {};
    ctx.emit({ type: "run.started", payload: { kind: ctx.kind, config: ctx.config, model, resumed_from_step: resumedFrom, ...initFrom } });
    if (ctx.kind === "train") await reconcileWithCheckpoints(ctx, resumedFrom);
    if (ctx.exports.groupReward) {
      ctx.emit({ type: "run.log", payload: { level: "info", message: `reward.ts exports groupReward: each group's rollouts are scored together; the default export's reward is kept as independent_reward` } });
    }
    if (ctx.connectMcp) {
      connection = await ctx.connectMcp();
      for (const line of connection.ready) ctx.emit({ type: "run.log", payload: { level: "info", message: line } });
      for (const line of connection.problems) ctx.emit({ type: "run.log", payload: { level: "error", message: line } });
    }
    const services: RolloutServices = { engine: ctx.engine, slots: ctx.engineSlots, judge: ctx.judge, mcp: connection?.mcp ?? NO_MCP, engineWatch: ctx.engineWatch };
    if (ctx.kind === "train") await runTrain(ctx, services, resumedFrom);
    else if (ctx.kind === "dry-run") await runDry(ctx, services);
    else await runEvalOnly(ctx, services);
    checkStopped(ctx.signal);
    // A run whose every rollout failed did nothing it was asked to: it must not read "completed".
    const allFailed = outcomes.everyOneFailed();
    if (allFailed) {
      status = "failed";
      error = allFailed;
    }
  } catch (err) {
    if (ctx.signal.aborted || err instanceof RunStopped) {
      status = "stopped";
    } else {
      status = "failed";
      error = err instanceof Error ? err.message : String(err);
    }
  }
  if (connection) {
    await connection.close().catch((err: unknown) => {
      ctx.emit({ type: "run.log", payload: { level: "warn", message: `closing the MCP servers: ${err instanceof Error ? err.message : String(err)}` } });
    });
  }
  ctx.emit({ type: "run.finished", payload: { status, error, diagnostics: [] } });
  return status;
}

