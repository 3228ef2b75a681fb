/**
 * What a Tinker model's calls leave on its run, through the same ingestion every run's events take
 * (art-log.ts appendEvents: numbered after lastSeq, stored, projected, sent live to the run page):
 *
 *   sample          one rollout per sampled sequence (rollout.finished), a group per sample call, in the
 *                   step the next optim_step makes: prompt and completion as text, token counts, the model
 *                   that sampled (`<run>@<step>` or the base), reward null (a Tinker client never says it)
 *   forward_backward each datum whose tokens are a recorded sample's prompt + completion is linked to it: the
 *                   rollout is stored again with its advantage (mean over its trained positions) in metrics
 *   optim_step      step.finished with the trainer's metrics (loss, grad norm, probs_corr between the
 *                   sampler's and the trainer's logprobs of the linked datums' tokens, tokens, batches)
 *   save            checkpoint.saved for a new step's checkpoint (`<run>@<step>`, the checkpoints panel)
 *
 * The per-run memory (this step's groups and the token index of its samples) is this process's: after a
 * web restart a step's earlier samples are still on the run, but no longer linked to its datums.
 */
import { createHash } from "node:crypto";
import { computeStepMetrics, RunEvent, type CheckpointInfo, type TinkerDatum, type TinkerForwardBackwardResponse, type TinkerOptimStepResponse, type TinkerSampleResponse, type Trajectory } from "@contracts";
import { appendEvents } from "@/features/art/server";
import type { Db } from "@/server/db-types";
import { pearson } from "@/features/flags/server";

interface Linked {
  group: number;
  index: number;
}

interface StepMemory {
  /** The step this memory's rollouts belong to (the run's next). */
  step: number;
  groups: Trajectory[][];
  /** Samples by their tokens; identical samples (common in a group) queue under one key, one datum each. */
  byTokens: Map<string, Linked[]>;
  /** Sampler vs trainer logprobs of linked datums' trained tokens (probs_corr), and the batches' figures. */
  samplerLp: number[];
  trainerLp: number[];
  batches: number;
  datums: number;
  linked: number;
  entropySum: number;
  clippedSum: number;
  entropyTokens: number;
}

const memory = new Map<string, StepMemory>();

const tokensKey = (ids: readonly number[]) => createHash("sha1").update(Int32Array.from(ids)).digest("base64");

function stepMemory(runId: string, step: number): StepMemory {
  let m = memory.get(runId);
  if (!m || m.step !== step) {
    m = { step, groups: [], byTokens: new Map(), samplerLp: [], trainerLp: [], batches: 0, datums: 0, linked: 0, entropySum: 0, clippedSum: 0, entropyTokens: 0 };
    memory.set(runId, m);
  }
  return m;
}

function append(db: Db, runId: string, inputs: { type: RunEvent["type"]; payload: unknown }[]) {
  return appendEvents(db, runId, (at) => ({
    events: inputs.map((e, i) => RunEvent.parse({ run_id: runId, seq: at.lastSeq + 1 + i, ts: at.now, attempt: at.attempt, type: e.type, payload: e.payload })),
    result: {},
  }));
}

/**
 * The step a sample or batch now belongs to: the run's last finished step (its newest step.finished) + 1.
 * Not Run.currentStep: ingestion raises that to a train rollout's step as soon as the rollout is stored.
 */
export async function nextStep(db: Db, runId: string): Promise<number> {
  const agg = await db.step.aggregate({ where: { runId }, _max: { step: true } });
  return (agg._max.step ?? 0) + 1;
}

/** A sample call's place in its run, taken before it samples: its step, its group, its sequences' ids. */
export interface SampleSlot {
  step: number;
  group: number;
  ids: string[];
}

/**
 * Reserves the group a sample call becomes (the run's next step, the next group of it), so its trajectory ids
 * are known before the engine answers: the runner records each sequence's tokens under its id (the token view).
 */
export async function reserveSample(db: Db, runId: string, numSamples: number): Promise<SampleSlot> {
  const step = await nextStep(db, runId);
  const m = stepMemory(runId, step);
  const group = m.groups.length;
  m.groups.push([]);
  return { step, group, ids: Array.from({ length: numSamples }, (_, i) => `tinker-${runId}-s${step}-g${group}-${i}`) };
}

/** A sample call's sequences as its reserved group of rollouts. */
export async function recordSample(db: Db, runId: string, slot: SampleSlot, input: { model: string; promptTokens: number[]; startedAt: number; answer: TinkerSampleResponse; params: Record<string, unknown> }): Promise<void> {
  const { step, group } = slot;
  const m = stepMemory(runId, step);
  const durationMs = Date.now() - input.startedAt;
  const rollouts: Trajectory[] = input.answer.sequences.map((s, index) => ({
    id: slot.ids[index] ?? `tinker-${runId}-s${step}-g${group}-${index}`,
    step,
    group,
    task_index: group,
    split: "train",
    task: { source: "tinker sample", prompt_tokens: input.promptTokens.length, sampling_params: input.params },
    messages: [
      { role: "user", content: input.answer.prompt_text },
      { role: "assistant", content: s.text },
    ],
    reward: null,
    metrics: { sampled_logprob_mean: s.logprobs.length ? s.logprobs.reduce((a, b) => a + b, 0) / s.logprobs.length : 0 },
    error: null,
    model: input.model,
    tokens: { prompt: input.promptTokens.length, completion: s.tokens.length },
    timings: { started_at: input.startedAt, duration_ms: durationMs, model_ms: durationMs },
    logs: [`stop_reason: ${s.stop_reason}`],
  }));
  m.groups[group] = rollouts;
  input.answer.sequences.forEach((s, index) => {
    const key = tokensKey([...input.promptTokens, ...s.tokens]);
    m.byTokens.set(key, [...(m.byTokens.get(key) ?? []), { group, index }]);
  });
  await append(db, runId, rollouts.map((t) => ({ type: "rollout.finished" as const, payload: t })));
}

/** A datum's whole sequence: its input and the last target (Tinker's datum is the sequence shifted by one). */
const wholeSequence = (d: TinkerDatum) => (d.target_tokens.length ? [...d.tokens, d.target_tokens[d.target_tokens.length - 1]!] : d.tokens);

/** Links a batch's datums to the step's samples, stores the linked rollouts with their advantages; returns how many linked. */
export async function recordBatch(db: Db, runId: string, datums: readonly TinkerDatum[], answer: TinkerForwardBackwardResponse, forwardOnly: boolean): Promise<number> {
  if (forwardOnly) return 0;
  const m = stepMemory(runId, await nextStep(db, runId));
  m.batches += 1;
  m.datums += datums.length;
  // The engine's per-batch means (rollbook_engine/tinker/training.py), weighted by the batch's tokens.
  const tokens = answer.metrics["tokens:sum"] ?? 0;
  m.entropySum += (answer.metrics["entropy:mean"] ?? 0) * tokens;
  m.clippedSum += (answer.metrics["clip_fraction:mean"] ?? 0) * tokens;
  m.entropyTokens += tokens;
  const changed: Trajectory[] = [];
  datums.forEach((d, i) => {
    const link = m.byTokens.get(tokensKey(wholeSequence(d)))?.shift();
    const out = answer.loss_fn_outputs[i];
    // Trained positions: a non-zero advantage (RL losses) or weight (cross_entropy).
    const mask = (d.advantages ?? d.weights ?? []).map((v) => v !== 0);
    if (d.logprobs && out) {
      mask.forEach((on, p) => {
        if (on && d.logprobs![p] !== undefined && out.logprobs[p] !== undefined) {
          m.samplerLp.push(Math.exp(d.logprobs![p]!));
          m.trainerLp.push(Math.exp(out.logprobs[p]!));
        }
      });
    }
    if (!link) return;
    m.linked += 1;
    const adv = (d.advantages ?? []).filter((_, p) => mask[p]);
    const rollout = m.groups[link.group]?.[link.index];
    if (!rollout) return;
    const advantage = adv.length ? adv.reduce((a, b) => a + b, 0) / adv.length : 0;
    const updated = { ...rollout, metrics: { ...rollout.metrics, advantage, trained_tokens: adv.length || mask.filter(Boolean).length } };
    m.groups[link.group]![link.index] = updated;
    changed.push(updated);
  });
  if (changed.length) await append(db, runId, changed.map((t) => ({ type: "rollout.finished" as const, payload: t })));
  return changed.length;
}

/** optim_step: the step's metrics (the trainer's, and probs_corr / entropy from its batches), then a fresh step. */
export async function recordStep(db: Db, runId: string, answer: TinkerOptimStepResponse, startedAt: number): Promise<void> {
  const step = answer.step;
  const m = memory.get(runId) ?? stepMemory(runId, step);
  const stepS = (Date.now() - startedAt) / 1000;
  // A reserved group whose sample failed has no rollouts: not a group of the step.
  const groups = m.groups.filter((g) => g.length > 0).map((g) => g.map((t) => ({ ...t, step })));
  const trainer = {
    loss: answer.metrics.loss,
    grad_norm: answer.metrics.grad_norm,
    kl: 0,
    clip_fraction: m.entropyTokens ? m.clippedSum / m.entropyTokens : 0,
    entropy: m.entropyTokens ? m.entropySum / m.entropyTokens : 0,
    probs_corr: (m.samplerLp.length ? pearson(m.samplerLp, m.trainerLp) : null) ?? 0,
    trained_tokens: answer.metrics.trained_tokens,
    groups_submitted: groups.length,
    groups_trainable: groups.length,
    skipped: answer.metrics.batches === 0,
    duration_s: answer.metrics.duration_s,
  };
  await append(db, runId, [
    { type: "run.log", payload: { level: "info", message: `Tinker optim_step → step ${step}: ${answer.metrics.batches} forward_backward batches, ${m.datums} datums (${m.linked} linked to this step's samples), ${answer.metrics.trained_tokens} trained tokens, lr ${answer.metrics.learning_rate}` } },
    { type: "step.finished", payload: computeStepMetrics(step, groups, trainer, { rolloutS: null, trainS: answer.metrics.duration_s, stepS }) },
  ]);
  memory.delete(runId);
}

/** A save that wrote a new checkpoint: checkpoint.saved (what lists it as `<run>@<step>`), once per step. */
export async function recordCheckpoint(db: Db, runId: string, checkpoint: CheckpointInfo): Promise<void> {
  const known = await db.checkpoint.findFirst({ where: { runId, step: checkpoint.step }, select: { step: true } });
  if (!known) await append(db, runId, [{ type: "checkpoint.saved", payload: checkpoint }]);
}

export async function recordLog(db: Db, runId: string, level: "info" | "warn" | "error", message: string): Promise<void> {
  await append(db, runId, [{ type: "run.log", payload: { level, message } }]);
}
