/**
 * One training step over rollouts sampled outside the runner's loop (the runner's `externalTrain` call; an
 * ART client's training job, features/art/server/art-training-jobs.ts). The step is the run's own: its
 * checkpoint is checkpoints/<step> of the run on this engine, served as `<run>@<step>` like any run's, and
 * its token sequences and trainer logprobs go to the run's token logs, so the token view shows them.
 *
 * Idempotent by run and step, as the loop's steps are (run-loop.ts trainStepSurvivingRestart): the engine
 * trains step N only after N − 1; a step whose checkpoint is already there (the web server asked again after
 * losing the stream) answers that checkpoint with metrics null instead of training twice.
 */
import type { ExternalTrainLine, ExternalTrainRequest, TrainGroup, TrainedTokens } from "../../../contracts";
import type { EngineClient } from "../engine/client";
import type { EngineWatch } from "../engine/restart-recovery";
import { isTransportFailure, restartCause, restartSince } from "../engine/restart-recovery";
import { deriveSeed } from "../rollout/seed";
import { externalGroups, ExternalSampleError, type ChatTokenizer } from "./external-samples";

export interface ExternalTrainDeps {
  engine: Pick<EngineClient, "train" | "checkpoints"> & ChatTokenizer;
  waitReady: (signal: AbortSignal) => Promise<void>;
  watch?: EngineWatch;
  /** Records the run's workspace on this runner (run-owner.ts); throws RunOwnerConflict for another's run id. */
  recordWorkspace: (runId: string, workspaceId: string) => void;
  recordTokens: (runId: string, trajectoryId: string, sequences: TrainGroup["samples"][number]["sequences"]) => void;
  recordTrainLogprobs: (runId: string, step: number, groups: readonly TrainGroup[], trained: Record<string, TrainedTokens>) => void;
  publishCheckpoint?: (runId: string, step: number) => Promise<void>;
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export async function* externalTrain(deps: ExternalTrainDeps, req: ExternalTrainRequest, signal: AbortSignal): AsyncGenerator<ExternalTrainLine> {
  try {
    deps.recordWorkspace(req.run_id, req.workspace_id);
  } catch (err) {
    yield { type: "error", message: message(err) };
    return;
  }
  await deps.waitReady(signal);
  const saved = await deps.engine.checkpoints(req.run_id);
  const newest = saved.reduce((m, c) => Math.max(m, c.step), 0);
  const already = saved.find((c) => c.step === req.step);
  if (already) {
    yield { type: "result", metrics: null, checkpoint: already };
    return;
  }
  if (newest !== req.step - 1) {
    yield { type: "error", message: `step ${req.step}: the engine's newest checkpoint of run ${req.run_id} is ${newest}, so the next step it can train is ${newest + 1}` };
    return;
  }
  let built;
  try {
    built = await externalGroups(req.groups, deps.engine, req.recompute_logprobs, signal);
  } catch (err) {
    if (!(err instanceof ExternalSampleError) && isTransportFailure(err)) throw err;
    yield { type: "error", message: message(err) };
    return;
  }
  const trajectories = req.groups.reduce((n, g) => n + g.trajectories.length, 0);
  const num_sequences = built.groups.reduce((n, g) => n + g.samples.reduce((m, s) => m + s.sequences.length, 0), 0);
  yield { type: "prepared", num_sequences, trajectories, exact_replies: built.exactReplies, retokenized_replies: built.retokenizedReplies, served_prompt_replies: built.servedPromptReplies, skipped: built.skipped, prompt_tokens: built.promptTokens };
  for (const g of built.groups) for (const s of g.samples) deps.recordTokens(req.run_id, s.trajectory_id, s.sequences);

  const body = { run_id: req.run_id, step: req.step, base_model: req.base_model, seed: deriveSeed(req.seed, "train", req.step), config: req.config, groups: built.groups };
  const since = deps.watch?.restarts() ?? 0;
  try {
    yield* trainOnce(deps, req, body);
  } catch (err) {
    const watch = deps.watch;
    if (!watch || signal.aborted || !isTransportFailure(err)) throw err;
    const restart = await restartSince(watch, since, signal);
    if (!restart) throw err;
    const cause = restartCause(restart);
    const after = (await deps.engine.checkpoints(req.run_id)).find((c) => c.step === req.step);
    if (after) {
      yield { type: "result", metrics: null, checkpoint: after };
      return;
    }
    try {
      yield* trainOnce(deps, req, body);
    } catch (retryErr) {
      yield { type: "error", message: `training step ${req.step}: ${cause}; trained again, it failed too: ${message(retryErr)}` };
    }
  }
}

async function* trainOnce(deps: ExternalTrainDeps, req: ExternalTrainRequest, body: Parameters<ExternalTrainDeps["engine"]["train"]>[0]): AsyncGenerator<ExternalTrainLine> {
  // Like the loop's steps, not aborted by the caller going away: a step in progress finishes and saves.
  for await (const line of deps.engine.train(body)) {
    if (line.type === "progress") {
      yield { type: "progress", micro_batch: line.micro_batch, micro_batches: line.micro_batches, loss: line.loss };
    } else if (line.type === "result") {
      deps.recordTrainLogprobs(req.run_id, req.step, body.groups, line.token_logprobs);
      if (deps.publishCheckpoint) await deps.publishCheckpoint(req.run_id, req.step).catch(() => undefined);
      yield { type: "result", metrics: line.metrics, checkpoint: line.checkpoint };
      return;
    } else {
      yield { type: "error", message: `training step ${req.step} failed: ${line.message}` };
      return;
    }
  }
  throw new Error(`training step ${req.step}: the engine ended the stream without a result`);
}
