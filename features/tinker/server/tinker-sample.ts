/**
 * The Tinker SDK's sample (SamplingClient.sample / compute_logprobs): prompt tokens in, sampled tokens and
 * their logprobs out, from a sampling session (a save of a model: `<run>@<step>`, or the base model) on the
 * runner's engine. A session of a model records each call's sequences as a group of rollouts of the model's
 * run (tinker-record.ts); the base model's samples belong to no run and are not recorded.
 */
import type { TinkerSampleResponse } from "@contracts";
import type { Db } from "@/server/db-types";
import { TinkerUserError } from "./tinker-futures";
import { activeTinkerRun, findTinkerRun } from "./tinker-models";
import { baseModelName, parseSamplingSession, type SamplerTarget } from "./tinker-paths";
import { recordSample, reserveSample } from "./tinker-record";
import { engineCall, runnerOfRun, runnerServing } from "./tinker-runner";
import { resolveWeights } from "./tinker-train";

/** Most samples one call may ask for (the engine batches them; Tinker's own limit is higher). */
export const MAX_NUM_SAMPLES = 64;

export interface SampleInput {
  promptTokens: number[];
  numSamples: number;
  maxTokens: number | null;
  temperature: number;
  topP: number;
  topK: number;
  seed: number | null;
  stop: string[];
  stopTokenIds: number[];
  promptLogprobs: boolean;
}

/** Where a sample call samples from: its session, else model_path, else base_model (as the SDK says). */
export async function samplerOf(db: Db, workspaceId: string, req: { sampling_session_id?: string | null; model_path?: string | null; base_model?: string | null }): Promise<SamplerTarget> {
  if (req.sampling_session_id) return parseSamplingSession(req.sampling_session_id);
  if (req.model_path) {
    const w = await resolveWeights(db, workspaceId, req.model_path, "model_path");
    return w.step === 0 ? { base: w.baseModel } : { run: w.runId, step: w.step };
  }
  if (req.base_model) return { base: baseModelName(req.base_model, "base_model") };
  throw new TinkerUserError("sampling_session_id: one of sampling_session_id, model_path or base_model is required", "sampling_session_id");
}

/** The base model a sampler samples (GET /api/v1/samplers/{id}); a run of another workspace is unknown. */
export async function samplerBaseModel(db: Db, workspaceId: string, target: SamplerTarget): Promise<string> {
  if ("base" in target) return target.base;
  const run = await findTinkerRun(db, workspaceId, target.run);
  if (!run) throw new TinkerUserError(`sampling_session_id: unknown sampling session (no model ${target.run} in this workspace)`, "sampling_session_id");
  return run.baseModel;
}

export async function sample(db: Db, workspaceId: string, target: SamplerTarget, input: SampleInput): Promise<TinkerSampleResponse> {
  if (input.numSamples < 1 || input.numSamples > MAX_NUM_SAMPLES) throw new TinkerUserError(`num_samples: from 1 to ${MAX_NUM_SAMPLES}`, "num_samples");
  if (input.promptTokens.length === 0) throw new TinkerUserError("prompt: no tokens", "prompt");
  let runnerId: string;
  let model: string;
  let runId: string | null = null;
  if ("run" in target) {
    const run = await findTinkerRun(db, workspaceId, target.run);
    if (!run) throw new TinkerUserError(`sampling_session_id: unknown sampling session (no model ${target.run} in this workspace)`, "sampling_session_id");
    // An active model's samples are its rollouts (and the client being alive); an ended one's checkpoints still
    // sample, but its history is closed: nothing is recorded on it.
    if (run.status === "running" || run.status === "lost") {
      await activeTinkerRun(db, workspaceId, run.id);
      runId = run.id;
    }
    runnerId = await runnerOfRun(db, workspaceId, run.id);
    model = target.step === 0 ? run.baseModel : `${run.id}@${target.step}`;
  } else {
    runnerId = await runnerServing(db, workspaceId, target.base);
    model = target.base;
  }
  // compute_logprobs (max_tokens 1, prompt_logprobs) is scoring, not a rollout: only real samples are recorded.
  const recorded = runId !== null && !(input.promptLogprobs && input.maxTokens === 1);
  const slot = recorded ? await reserveSample(db, runId!, input.numSamples) : null;
  const startedAt = Date.now();
  const answer = await engineCall(db, runnerId, workspaceId, "sample", {
    model,
    prompt_token_ids: input.promptTokens,
    num_samples: input.numSamples,
    // No max_tokens: the engine's room left in the context (as /api/v1 without max_tokens would be capped, so is this).
    max_tokens: input.maxTokens ?? 1024,
    temperature: input.temperature,
    top_p: input.topP,
    top_k: input.topK,
    seed: input.seed,
    stop: input.stop,
    stop_token_ids: input.stopTokenIds,
    prompt_logprobs: input.promptLogprobs,
    user: "run" in target ? target.run : `tinker:${workspaceId}`,
    ...(slot ? { record: { run_id: runId!, trajectory_ids: slot.ids } } : {}),
  });
  if (slot) {
    await recordSample(db, runId!, slot, { model, promptTokens: input.promptTokens, startedAt, answer, params: { temperature: input.temperature, max_tokens: input.maxTokens, top_p: input.topP, seed: input.seed } });
  }
  return answer;
}
