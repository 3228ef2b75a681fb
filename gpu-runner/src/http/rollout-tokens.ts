/**
 * GET /runs/<run>/rollouts/<trajectory_id>/tokens: one rollout's tokens for the token view — its sequences
 * from tokens.jsonl, what training did with it from train-logprobs.jsonl, and each token's text from the
 * engine's tokenizer (POST /detokenize), joined into contracts/rollout-tokens.ts's RolloutTokens.
 */
import fs from "node:fs";
import readline from "node:readline";
import { z } from "zod";
import { TokenSequence, type RolloutTokens, type RolloutTraining } from "../../../contracts";
import { tokenLogFile } from "../events/token-log";
import { TrainLogprobLine, trainLogprobFile } from "../events/train-logprob-log";

const TokenLine = z.object({ trajectory_id: z.string(), sequences: z.array(TokenSequence) });

export class RolloutTokensNotFound extends Error {}

/**
 * The last line of `file` whose trajectory_id is `id` (a re-done step appends again: the last one is what
 * trained), or null. Both logs write trajectory_id first, so lines are matched by prefix and only the
 * match is parsed: a long run's tokens.jsonl holds thousands of ~25 KB lines.
 */
async function lastLineFor<T>(file: string, id: string, schema: z.ZodType<T>): Promise<T | null> {
  if (!fs.existsSync(file)) return null;
  const prefix = `{"trajectory_id":${JSON.stringify(id)},`;
  let found: string | null = null;
  const lines = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  for await (const line of lines) if (line.startsWith(prefix)) found = line;
  if (found === null) return null;
  try {
    const parsed = schema.safeParse(JSON.parse(found));
    return parsed.success ? parsed.data : null;
  } catch {
    return null; // a torn last line (the runner killed mid-write)
  }
}

/** Joins a rollout's sequences, its training record and the token texts. Pure: tested on its own. */
export function assembleRolloutTokens(
  trajectoryId: string,
  sequences: readonly TokenSequence[],
  record: TrainLogprobLine | null,
  textOf: (id: number) => string,
): RolloutTokens {
  const training: RolloutTraining = !record
    ? { status: "no_record", step: null, advantage: null }
    : { status: record.trained ? "trained" : "not_trained", step: record.step, advantage: record.advantage };
  return {
    trajectory_id: trajectoryId,
    training,
    sequences: sequences.map((seq, q) => {
      const trainerLps = record?.trained ? (record.sequences?.[q] ?? []) : null;
      let k = 0; // index among this sequence's masked tokens
      const retokenized = seq.recomputed_logprobs === true;
      return {
        retokenized,
        tokens: seq.tokens.map((id, i) => {
          const sampled = seq.mask[i] === 1;
          // A re-tokenised reply has no sampling logprob (its 0s are placeholders): none shown, no ratio.
          const samplingLp = sampled && !retokenized ? seq.logprobs[i]! : null;
          const trainerLp = sampled && trainerLps ? (trainerLps[k] ?? null) : null;
          if (sampled) k++;
          const scaffolding = seq.scaffolding?.[i];
          return {
            id,
            text: textOf(id),
            sampled,
            trained: trainerLp !== null,
            sampling_logprob: samplingLp,
            trainer_logprob: trainerLp,
            ratio: trainerLp !== null && samplingLp !== null ? Math.exp(trainerLp - samplingLp) : null,
            // Older logs have no roles: null, and the view draws every token alike.
            role: sampled && scaffolding !== undefined ? (scaffolding === 1 ? "scaffolding" : "content") : null,
          };
        }),
      };
    }),
  };
}

/** Reads both logs and decodes the distinct ids; RolloutTokensNotFound when the rollout has no token record. */
export async function rolloutTokens(
  runsDir: string,
  runId: string,
  trajectoryId: string,
  detokenize: (ids: number[]) => Promise<string[]>,
): Promise<RolloutTokens> {
  const tokens = await lastLineFor(tokenLogFile(runsDir, runId), trajectoryId, TokenLine);
  if (!tokens) {
    throw new RolloutTokensNotFound(
      `rollout ${trajectoryId} of run ${runId} has no recorded tokens on this runner (runs from before token recording, or a rollout that failed before sampling)`,
    );
  }
  const record = await lastLineFor(trainLogprobFile(runsDir, runId), trajectoryId, TrainLogprobLine);
  const distinct = [...new Set(tokens.sequences.flatMap((s) => s.tokens))];
  const pieces = await detokenize(distinct);
  const text = new Map(distinct.map((id, i) => [id, pieces[i]!]));
  return assembleRolloutTokens(trajectoryId, tokens.sequences, record, (id) => text.get(id) ?? "");
}
