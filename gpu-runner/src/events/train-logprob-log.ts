/**
 * What each training step did with each rollout it was sent, one JSON line per submitted rollout in
 * runs/<run>/train-logprobs.jsonl, beside tokens.jsonl: the step, whether it trained on the rollout, its
 * advantage and the trainer's first-pass logprob of every masked token (per sequence, masked tokens in
 * order). The engine returns them in /train's result line (contracts/train.ts TrainedTokens) rather than
 * writing them itself: the engine may run on another machine (ENGINE_URL) and share no folder with us.
 * Read back by the token view (http/rollout-tokens.ts).
 */
import path from "node:path";
import { z } from "zod";
import type { TrainGroup, TrainedTokens } from "../../../contracts";
import { appendWhole } from "./append-whole";
import { assertSafeRunId } from "./event-log";

export const TrainLogprobLine = z.object({
  trajectory_id: z.string(),
  step: z.number().int(),
  trained: z.boolean(),
  advantage: z.number().nullable(),
  /** Per sequence of the rollout, the trainer's logprob of each mask=1 token in order; null when not trained. */
  sequences: z.array(z.array(z.number())).nullable(),
});
export type TrainLogprobLine = z.infer<typeof TrainLogprobLine>;

export function trainLogprobFile(runsDir: string, runId: string): string {
  assertSafeRunId(runId);
  return path.join(runsDir, runId, "train-logprobs.jsonl");
}

/** One line per submitted sample: the engine's record where it trained on it, else trained: false. */
export function trainLogprobLines(step: number, groups: readonly TrainGroup[], trained: Record<string, TrainedTokens>): TrainLogprobLine[] {
  return groups.flatMap((g) =>
    g.samples.map((s) => {
      const t = trained[s.trajectory_id];
      // trajectory_id first: readers find a rollout's line by its prefix without parsing every line.
      return t
        ? { trajectory_id: s.trajectory_id, step, trained: true, advantage: t.advantage, sequences: t.sequences }
        : { trajectory_id: s.trajectory_id, step, trained: false, advantage: null, sequences: null };
    }),
  );
}

/** Appends a step's lines in one write (a failure is logged, never fails the run: the view is optional). */
export function appendTrainLogprobs(runsDir: string, runId: string, lines: readonly TrainLogprobLine[], onError: (message: string) => void): void {
  if (lines.length === 0) return;
  try {
    appendWhole(trainLogprobFile(runsDir, runId), lines.map((l) => JSON.stringify(l) + "\n").join(""));
  } catch (e) {
    onError(`could not record the trainer's logprobs of step ${lines[0]!.step}: ${(e as Error).message}`);
  }
}
