/**
 * Token sequences of rollouts sampled outside the runner's loop (an ART client's trajectories), for one
 * training step. Each sampled reply becomes a turn of training-sample.ts, as the runner's own rollouts do:
 *
 *   prompt ids      the engine's /tokenize of the messages before the reply (with the history's tools), given
 *                   the reply's sampled ids: the same rendering /v1/chat/completions fed the model when it
 *                   sampled (prompt.build_prompt), or, for a reply the engine sampled after a prefill (a
 *                   tool_choice-forced call, which ART's trajectory does not record), the prompt it recorded
 *                   feeding (served_prompts.py, prefill included) — so the prompt trained on is the prompt that
 *                   was sampled from;
 *   completion ids  the ids the engine sampled (ART keeps them in the Choice's logprobs as `token_id:<id>`),
 *                   with their sampling logprobs.
 *
 * A reply without ids (sampled by another server, or logged without logprobs) is re-tokenised through the chat
 * template: the whole conversation up to it rendered without a generation prompt, less the prompt's ids. Its
 * sequence is marked `recomputed_logprobs` (the trainer uses the policy's own logprobs, as ART does without
 * logprobs) and the token view says it was re-tokenised.
 */
import type { ChatMessage, ExternalHistory, ExternalTrajectory, TokenSequence, TrainGroup, TrainSample, ToolSpec } from "../../../contracts";
import { buildSequences, type SampledTurn } from "../rollout/training-sample";

export interface ChatTokenizer {
  /**
   * The engine's POST /tokenize: the prompt ids of `messages` (with a generation prompt unless told otherwise);
   * with `sampled_token_ids`, the prompt the engine fed before that reply when it recorded one (`served`).
   */
  tokenize(
    body: { messages: ChatMessage[]; tools?: ToolSpec[]; add_generation_prompt: boolean; sampled_token_ids?: number[] },
    signal?: AbortSignal,
  ): Promise<{ tokens: number[]; served: boolean }>;
}

export class ExternalSampleError extends Error {}

interface HistoryTurns {
  turns: SampledTurn[];
  /** Per turn: re-tokenised (no sampled ids). */
  retokenized: boolean[];
  /** Replies whose prompt was the engine's record of what it fed (a forced call's prefill included). */
  served: number;
}

function startsWith(a: readonly number[], prefix: readonly number[]): boolean {
  return prefix.length <= a.length && prefix.every((id, i) => a[i] === id);
}

async function historyTurns(history: ExternalHistory, where: string, tok: ChatTokenizer, recompute: boolean, signal?: AbortSignal): Promise<HistoryTurns> {
  const messages: ChatMessage[] = [];
  const out: HistoryTurns = { turns: [], retokenized: [], served: 0 };
  const tools = history.tools && history.tools.length > 0 ? { tools: history.tools } : {};
  for (const [i, item] of history.items.entries()) {
    if ("message" in item) {
      messages.push(item.message);
      continue;
    }
    const reply = item.sampled;
    if (messages.length === 0) throw new ExternalSampleError(`${where}.items[${i}]: a sampled reply with no messages before it (nothing prompted it)`);
    const sampledIds = reply.token_ids && reply.token_ids.length > 0 ? reply.token_ids : null;
    const rendered = await tok.tokenize({ messages, ...tools, add_generation_prompt: true, ...(sampledIds ? { sampled_token_ids: sampledIds } : {}) }, signal);
    const prompt = rendered.tokens;
    if (sampledIds && reply.token_ids) {
      if (rendered.served) out.served += 1;
      const logprobs = reply.logprobs;
      if (!recompute && (!logprobs || logprobs.length !== reply.token_ids.length)) {
        throw new ExternalSampleError(`${where}.items[${i}]: ${reply.token_ids.length} sampled token ids but ${logprobs?.length ?? 0} logprobs`);
      }
      out.turns.push({ promptTokenIds: prompt, completionTokenIds: reply.token_ids, completionLogprobs: recompute ? reply.token_ids.map(() => 0) : logprobs });
      out.retokenized.push(recompute);
    } else {
      const whole = (await tok.tokenize({ messages: [...messages, reply.message], ...tools, add_generation_prompt: false }, signal)).tokens;
      if (!startsWith(whole, prompt) || whole.length === prompt.length) {
        throw new ExternalSampleError(
          `${where}.items[${i}]: the reply has no sampled token ids (logprobs with token_id:<id>) and the chat template does not render it after its prompt; sample it through this Rollbook with logprobs=true`,
        );
      }
      const completion = whole.slice(prompt.length);
      out.turns.push({ promptTokenIds: prompt, completionTokenIds: completion, completionLogprobs: completion.map(() => 0) });
      out.retokenized.push(true);
    }
    messages.push(reply.message);
  }
  return out;
}

export interface ExternalSample {
  sample: TrainSample;
  exactReplies: number;
  retokenizedReplies: number;
  servedPromptReplies: number;
  /** Each sampled reply's prompt length (its /tokenize ids), in reply order: the rollout's prompt counts. */
  promptTokens: number[];
}

/**
 * One trajectory's sample: each history's turns stitched into sequences (training-sample.ts); a sequence is
 * marked recomputed when any reply in it was re-tokenised (its logprobs are then the policy's own, all of it).
 * null when it sampled nothing (a trajectory of messages only has nothing to train on).
 */
export async function externalSample(t: ExternalTrajectory, where: string, tok: ChatTokenizer, recompute: boolean, signal?: AbortSignal): Promise<ExternalSample | null> {
  const sequences: TokenSequence[] = [];
  let exactReplies = 0;
  let retokenizedReplies = 0;
  let servedPromptReplies = 0;
  const promptTokens: number[] = [];
  for (const [h, history] of t.histories.entries()) {
    const { turns, retokenized, served } = await historyTurns(history, `${where}.histories[${h}]`, tok, recompute, signal);
    if (turns.length === 0) continue;
    servedPromptReplies += served;
    for (const turn of turns) promptTokens.push(turn.promptTokenIds.length);
    retokenizedReplies += retokenized.filter(Boolean).length;
    exactReplies += retokenized.filter((r) => !r).length;
    // Sequences in turn order; mark every one when any reply was re-tokenised (simple and safe: the trainer
    // then takes the policy's logprobs for the exact replies of that history too, a ratio of 1 at the first pass).
    const anyRetokenized = retokenized.some(Boolean);
    for (const s of buildSequences(turns)) sequences.push(anyRetokenized ? { ...s, logprobs: s.logprobs.map(() => 0), recomputed_logprobs: true } : s);
  }
  if (sequences.length === 0) return null;
  return { sample: { trajectory_id: t.id, reward: t.reward, sequences }, exactReplies, retokenizedReplies, servedPromptReplies, promptTokens };
}

export interface ExternalGroups {
  groups: TrainGroup[];
  exactReplies: number;
  retokenizedReplies: number;
  servedPromptReplies: number;
  skipped: { id: string; reason: string }[];
  /** Per trajectory id, its replies' prompt lengths (ExternalSample.promptTokens), trained or not. */
  promptTokens: Record<string, number[]>;
}

/** Every group's samples; a group keeps only if two of its trajectories sampled something (a relative advantage needs two). */
export async function externalGroups(
  groups: readonly { trajectories: readonly ExternalTrajectory[] }[],
  tok: ChatTokenizer,
  recompute: boolean,
  signal?: AbortSignal,
): Promise<ExternalGroups> {
  const out: ExternalGroups = { groups: [], exactReplies: 0, retokenizedReplies: 0, servedPromptReplies: 0, skipped: [], promptTokens: {} };
  for (const [g, group] of groups.entries()) {
    const samples: TrainSample[] = [];
    for (const [i, t] of group.trajectories.entries()) {
      const built = await externalSample(t, `trajectory_groups[${g}].trajectories[${i}]`, tok, recompute, signal);
      if (!built) {
        out.skipped.push({ id: t.id, reason: "it has no sampled reply (no Choice in messages_and_choices)" });
        continue;
      }
      samples.push(built.sample);
      out.promptTokens[t.id] = built.promptTokens;
      out.exactReplies += built.exactReplies;
      out.retokenizedReplies += built.retokenizedReplies;
      out.servedPromptReplies += built.servedPromptReplies;
    }
    if (samples.length >= 2) out.groups.push({ samples });
    else for (const s of samples) out.skipped.push({ id: s.trajectory_id, reason: `its group ${g} has fewer than 2 trajectories to compare` });
  }
  return out;
}
