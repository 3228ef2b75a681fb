/**
 * Token-exact training samples. The trainer must see exactly the tokens the model was fed and sampled,
 * never a re-tokenisation of the text (re-tokenising drifts from what was sampled and breaks the
 * importance ratios). Each turn of a rollout gives the engine's own prompt token ids and the sampled
 * completion token ids + logprobs; consecutive turns are stitched into one sequence when the next prompt
 * starts with everything seen so far, else (the chat template rewrote history) a new sequence starts.
 */
import { type TokenRole, type TokenSequence, type TrainSample } from "../../../contracts";

/** One model call of a rollout, as the engine returned it. */
export interface SampledTurn {
  promptTokenIds: number[];
  completionTokenIds: number[];
  /** Sampling logprob of each completion token; must be the same length as completionTokenIds. */
  completionLogprobs: number[] | null;
  /** Each completion token's role (the engine's token_roles); absent where unknown (an older engine, a reply sampled elsewhere). */
  completionRoles?: TokenRole[] | null;
}

export class TrainingSampleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TrainingSampleError";
  }
}

function startsWith(haystack: readonly number[], prefix: readonly number[]): boolean {
  if (prefix.length > haystack.length) return false;
  for (let i = 0; i < prefix.length; i++) if (haystack[i] !== prefix[i]) return false;
  return true;
}

interface Building {
  tokens: number[];
  mask: (0 | 1)[];
  logprobs: number[];
  /** null once a turn of the sequence came without roles: the whole sequence's are then unknown. */
  scaffolding: (0 | 1)[] | null;
}

function pushPrompt(seq: Building, ids: readonly number[]): void {
  for (const id of ids) {
    seq.tokens.push(id);
    seq.mask.push(0);
    seq.logprobs.push(0);
    seq.scaffolding?.push(0);
  }
}

function pushCompletion(seq: Building, ids: readonly number[], logprobs: readonly number[], roles: readonly TokenRole[] | null | undefined): void {
  const known = roles && roles.length === ids.length ? roles : null;
  if (!known) seq.scaffolding = null;
  ids.forEach((id, i) => {
    seq.tokens.push(id);
    seq.mask.push(1);
    seq.logprobs.push(logprobs[i] as number);
    seq.scaffolding?.push(known?.[i] === "scaffolding" ? 1 : 0);
  });
}

/** Build the token sequences of one rollout from its turns (in call order). */
export function buildSequences(turns: readonly SampledTurn[]): TokenSequence[] {
  if (turns.length === 0) throw new TrainingSampleError("rollout made no model calls: nothing to train on");
  const sequences: Building[] = [];
  let current: Building | null = null;
  turns.forEach((turn, t) => {
    const { promptTokenIds: prompt, completionTokenIds: completion, completionLogprobs: logprobs } = turn;
    if (prompt.length === 0) throw new TrainingSampleError(`turn ${t}: the engine returned no prompt token ids`);
    if (logprobs === null || logprobs === undefined) {
      // Without sampling logprobs the PPO/CISPO ratio silently degrades to plain REINFORCE.
      throw new TrainingSampleError(`turn ${t}: the engine returned no sampling logprobs`);
    }
    if (logprobs.length !== completion.length) {
      throw new TrainingSampleError(
        `turn ${t}: ${completion.length} completion tokens but ${logprobs.length} logprobs`,
      );
    }
    if (logprobs.some((l) => !Number.isFinite(l))) {
      throw new TrainingSampleError(`turn ${t}: a sampling logprob is not a number`);
    }
    if (current !== null && startsWith(prompt, current.tokens)) {
      // The new prompt extends what was seen: append only the new part (tool results, next user turn…).
      pushPrompt(current, prompt.slice(current.tokens.length));
    } else {
      // First turn, or the template rewrote history (e.g. stripped earlier <think> blocks): new sequence.
      current = { tokens: [], mask: [], logprobs: [], scaffolding: [] };
      sequences.push(current);
      pushPrompt(current, prompt);
    }
    pushCompletion(current, completion, logprobs, turn.completionRoles);
  });
  return sequences.map((s) => ({ tokens: s.tokens, mask: s.mask, logprobs: s.logprobs, ...(s.scaffolding ? { scaffolding: s.scaffolding } : {}) }));
}

export function buildTrainSample(trajectoryId: string, reward: number, turns: readonly SampledTurn[]): TrainSample {
  if (!Number.isFinite(reward)) throw new TrainingSampleError(`reward ${reward} is not a finite number`);
  return { trajectory_id: trajectoryId, reward, sequences: buildSequences(turns) };
}
