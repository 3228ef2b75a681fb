/**
 * A Tinker model's training calls, each run in the model's order (inOrder: the SDK's seq_id order) on its
 * runner's engine (tinker-runner.ts), then recorded on its run (tinker-record.ts):
 *
 *   forward_backward / forward   datums → the engine's trainer (gradients add up until optim_step)
 *   optim_step                   Adam with the client's parameters: one step of the run
 *   save_weights_for_sampler     the run's checkpoint of its current step (`<run>@<step>`), named and/or as a
 *                                sampling session; step 0 (nothing trained) samples the base model
 *   save_weights (save_state)    the same checkpoint (it holds the optimizer state too), under a state name
 *   load_weights (load_state)    a state of a model of this workspace into this model (optimizer optional)
 *
 * The losses are the trainer's own (rollbook_engine/tinker: Tinker's cross_entropy, importance_sampling,
 * ppo and cispo through trainer/loss.py); any other loss is refused by name here, before the engine.
 */
import { TINKER_LOSSES, type TinkerAdamParams, type TinkerDatum, type TinkerForwardBackwardResponse, type TinkerLoss } from "@contracts";
import type { Db } from "@/server/db-types";
import { inOrder, TinkerUserError } from "./tinker-futures";
import type { TinkerRun } from "./tinker-models";
import { parseWeightsPath, samplingSessionId, weightsName, weightsPath, type WeightsKind } from "./tinker-paths";
import { recordBatch, recordCheckpoint, recordLog, recordStep } from "./tinker-record";
import { engineCall, runnerOfRun } from "./tinker-runner";

/** A decoded tensor of a datum's loss_fn_inputs (features/tinker/wire). */
export interface WireTensor {
  dtype: "float32" | "int64";
  shape: number[] | null;
  values: number[];
}

export interface WireDatum {
  tokens: number[];
  loss_fn_inputs: Record<string, WireTensor>;
}

const INPUTS: Record<string, { key: keyof TinkerDatum; dtype: WireTensor["dtype"] }> = {
  target_tokens: { key: "target_tokens", dtype: "int64" },
  weights: { key: "weights", dtype: "float32" },
  logprobs: { key: "logprobs", dtype: "float32" },
  advantages: { key: "advantages", dtype: "float32" },
};

/** The SDK's datums as the engine's, every refusal naming `data[i].…`. Exported for tests. */
export function engineDatums(data: readonly WireDatum[]): TinkerDatum[] {
  if (data.length === 0) throw new TinkerUserError("data: at least one datum", "data");
  return data.map((d, i) => {
    const out: TinkerDatum = { tokens: d.tokens, target_tokens: [] };
    let targets = false;
    for (const [name, t] of Object.entries(d.loss_fn_inputs)) {
      const field = `data[${i}].loss_fn_inputs.${name}`;
      const spec = INPUTS[name];
      if (!spec) throw new TinkerUserError(`${field}: not an input of the served losses (${Object.keys(INPUTS).join(", ")})`, field);
      if (t.shape && t.shape.length > 1) throw new TinkerUserError(`${field}: one value per position (a 1-D tensor), got shape [${t.shape.join(", ")}]`, field);
      if (spec.dtype === "int64" && t.dtype !== "int64") throw new TinkerUserError(`${field}: must be int64 token ids`, field);
      (out as unknown as Record<string, number[]>)[spec.key] = t.values;
      if (name === "target_tokens") targets = true;
    }
    if (!targets) throw new TinkerUserError(`data[${i}].loss_fn_inputs.target_tokens: required (the token each position is trained to predict)`, `data[${i}].loss_fn_inputs.target_tokens`);
    return out;
  });
}

export function lossOf(name: string): TinkerLoss {
  if ((TINKER_LOSSES as readonly string[]).includes(name)) return name as TinkerLoss;
  throw new TinkerUserError(`loss_fn: '${name}' is not served by Rollbook (served: ${TINKER_LOSSES.join(", ")}; custom losses run client-side with forward_backward_custom)`, "loss_fn");
}

export function lossConfigOf(config: Record<string, number | string>): { clip_low_threshold?: number; clip_high_threshold?: number } | null {
  const out: { clip_low_threshold?: number; clip_high_threshold?: number } = {};
  for (const [k, v] of Object.entries(config)) {
    if (k !== "clip_low_threshold" && k !== "clip_high_threshold") throw new TinkerUserError(`loss_fn_config.${k}: not a setting of the served losses (clip_low_threshold, clip_high_threshold)`, `loss_fn_config.${k}`);
    if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) throw new TinkerUserError(`loss_fn_config.${k}: a positive number`, `loss_fn_config.${k}`);
    out[k] = v;
  }
  return Object.keys(out).length ? out : null;
}

const target = (run: TinkerRun) => ({ run_id: run.id, base_model: run.baseModel, lora_rank: run.loraRank, seed: run.seed });

export async function forwardBackward(db: Db, workspaceId: string, run: TinkerRun, input: { lossFn: string; lossFnConfig: Record<string, number | string>; data: readonly WireDatum[]; forwardOnly: boolean }): Promise<TinkerForwardBackwardResponse> {
  const loss_fn = lossOf(input.lossFn);
  const loss_fn_config = lossConfigOf(input.lossFnConfig);
  const data = engineDatums(input.data);
  return inOrder(run.id, async () => {
    const runnerId = await runnerOfRun(db, workspaceId, run.id);
    const answer = await engineCall(db, runnerId, workspaceId, "forward_backward", { ...target(run), forward_only: input.forwardOnly, loss_fn, loss_fn_config, data });
    await recordBatch(db, run.id, data, answer, input.forwardOnly);
    return answer;
  });
}

export async function optimStep(db: Db, workspaceId: string, run: TinkerRun, adam: TinkerAdamParams): Promise<Record<string, number>> {
  return inOrder(run.id, async () => {
    const startedAt = Date.now();
    const runnerId = await runnerOfRun(db, workspaceId, run.id);
    const answer = await engineCall(db, runnerId, workspaceId, "optim_step", { ...target(run), adam_params: adam });
    await recordStep(db, run.id, answer, startedAt);
    return { step: answer.step, ...answer.metrics };
  });
}

/** A save of the current step; `name` records it under that name (a second save of the name points it at the newer step). */
export async function saveWeights(db: Db, workspaceId: string, run: TinkerRun, kind: WeightsKind, name: string | null, overwrite = true): Promise<{ step: number; path: string | null; samplingSessionId: string }> {
  const checked = name === null ? null : weightsName(name, "path");
  return inOrder(run.id, async () => {
    if (checked !== null && !overwrite && (await db.tinkerWeights.findUnique({ where: { runId_kind_name: { runId: run.id, kind, name: checked } }, select: { id: true } }))) {
      throw new TinkerUserError(`path: ${weightsPath(run.id, kind, checked)} exists already (pass overwrite=True to replace it)`, "path");
    }
    const runnerId = await runnerOfRun(db, workspaceId, run.id);
    const saved = await engineCall(db, runnerId, workspaceId, "save", { ...target(run), kind });
    if (saved.checkpoint) await recordCheckpoint(db, run.id, saved.checkpoint);
    if (checked !== null) {
      await db.tinkerWeights.upsert({ where: { runId_kind_name: { runId: run.id, kind, name: checked } }, create: { runId: run.id, kind, name: checked, step: saved.step }, update: { step: saved.step } });
    }
    return { step: saved.step, path: checked === null ? null : weightsPath(run.id, kind, checked), samplingSessionId: samplingSessionId({ run: run.id, step: saved.step }) };
  });
}

/** The step a tinker:// path names, in this workspace (a path of another workspace's model is unknown). */
export async function resolveWeights(db: Db, workspaceId: string, path: string, field: string): Promise<{ runId: string; step: number; kind: WeightsKind; baseModel: string }> {
  const p = parseWeightsPath(path, field);
  const row = await db.tinkerWeights.findFirst({ where: { runId: p.runId, kind: p.kind, name: p.name, run: { workspaceId } }, select: { step: true, run: { select: { baseModel: true } } } });
  if (!row) throw new TinkerUserError(`${field}: no weights saved as ${JSON.stringify(path)} in this workspace`, field);
  return { runId: p.runId, step: row.step, kind: p.kind, baseModel: row.run.baseModel };
}

export async function loadState(db: Db, workspaceId: string, run: TinkerRun, path: string, withOptimizer: boolean): Promise<{ step: number }> {
  const source = await resolveWeights(db, workspaceId, path, "path");
  if (source.baseModel !== run.baseModel) throw new TinkerUserError(`path: ${path} was trained on ${source.baseModel}, this model is ${run.baseModel}`, "path");
  if (source.step === 0) return { step: 0 };
  return inOrder(run.id, async () => {
    const runnerId = await runnerOfRun(db, workspaceId, run.id);
    const loaded = await engineCall(db, runnerId, workspaceId, "load", { ...target(run), source_run_id: source.runId, step: source.step, with_optimizer: withOptimizer });
    await recordLog(db, run.id, "info", `Tinker load_state: ${path} (step ${source.step} of ${source.runId === run.id ? "this run" : `run ${source.runId}`}${withOptimizer ? ", optimizer included" : ", weights only"})`);
    return loaded;
  });
}
