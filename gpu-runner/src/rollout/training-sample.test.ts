import { describe, expect, it } from "vitest";
import { TrainSample } from "../../../contracts";
import { buildSequences, buildTrainSample, TrainingSampleError, type SampledTurn } from "./training-sample";

describe("buildSequences", () => {
  it("stitches a multi-turn rollout into one sequence: fed tokens masked 0, sampled tokens masked 1", () => {
    // turn 1: prompt [1,2,3] → sampled [10,11]
    // turn 2: prompt = everything so far + tool result [20,21] → sampled [12]
    // turn 3: prompt = everything so far + user [30] → sampled [13,14,15]
    const turns: SampledTurn[] = [
      { promptTokenIds: [1, 2, 3], completionTokenIds: [10, 11], completionLogprobs: [-0.1, -0.2] },
      { promptTokenIds: [1, 2, 3, 10, 11, 20, 21], completionTokenIds: [12], completionLogprobs: [-0.3] },
      {
        promptTokenIds: [1, 2, 3, 10, 11, 20, 21, 12, 30],
        completionTokenIds: [13, 14, 15],
        completionLogprobs: [-0.4, -0.5, -0.6],
      },
    ];
    const seqs = buildSequences(turns);
    expect(seqs).toHaveLength(1);
    const [s] = seqs;
    expect(s!.tokens).toEqual([1, 2, 3, 10, 11, 20, 21, 12, 30, 13, 14, 15]);
    expect(s!.mask).toEqual([0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1]);
    expect(s!.logprobs).toEqual([0, 0, 0, -0.1, -0.2, 0, 0, -0.3, 0, -0.4, -0.5, -0.6]);
    // The masked-1 tokens are exactly what was sampled, in order.
    const sampled = s!.tokens.filter((_, i) => s!.mask[i] === 1);
    expect(sampled).toEqual(turns.flatMap((t) => t.completionTokenIds));
    expect(TrainSample.safeParse({ trajectory_id: "t", reward: 1, sequences: seqs }).success).toBe(true);
  });

  it("starts a new sequence when the chat template rewrote history", () => {
    const turns: SampledTurn[] = [
      // the model thought [50,51] then answered [10]
      { promptTokenIds: [1, 2], completionTokenIds: [50, 51, 10], completionLogprobs: [-1, -1, -1] },
      // the template strips the thinking: the prompt no longer starts with [1,2,50,51,10]
      { promptTokenIds: [1, 2, 10, 7], completionTokenIds: [11], completionLogprobs: [-2] },
      // a third turn extending the second sequence is appended to it
      { promptTokenIds: [1, 2, 10, 7, 11, 8], completionTokenIds: [12], completionLogprobs: [-3] },
    ];
    const seqs = buildSequences(turns);
    expect(seqs).toHaveLength(2);
    expect(seqs[0]!.tokens).toEqual([1, 2, 50, 51, 10]);
    expect(seqs[0]!.mask).toEqual([0, 0, 1, 1, 1]);
    expect(seqs[1]!.tokens).toEqual([1, 2, 10, 7, 11, 8, 12]);
    expect(seqs[1]!.mask).toEqual([0, 0, 0, 0, 1, 0, 1]);
    expect(seqs[1]!.logprobs).toEqual([0, 0, 0, 0, -2, 0, -3]);
  });

  it("carries each sampled token's role as scaffolding 1/0, prompt tokens 0; a turn without roles leaves its sequence without", () => {
    const turns: SampledTurn[] = [
      { promptTokenIds: [1, 2], completionTokenIds: [10, 11, 12], completionLogprobs: [-1, -1, -1], completionRoles: ["scaffolding", "content", "scaffolding"] },
      { promptTokenIds: [1, 2, 10, 11, 12, 20], completionTokenIds: [13, 14], completionLogprobs: [-1, -1], completionRoles: ["content", "scaffolding"] },
    ];
    const [s] = buildSequences(turns);
    expect(s!.scaffolding).toEqual([0, 0, 1, 0, 1, 0, 0, 1]);
    expect(TrainSample.safeParse({ trajectory_id: "t", reward: 1, sequences: [s] }).success).toBe(true);
    // An older engine (no token_roles), or roles that do not match the ids: unknown, not guessed.
    const older = buildSequences([turns[0]!, { ...turns[1]!, completionRoles: undefined }]);
    expect(older[0]).not.toHaveProperty("scaffolding");
    expect(buildSequences([{ ...turns[0]!, completionRoles: ["content"] }])[0]).not.toHaveProperty("scaffolding");
  });

  it("refuses missing or mismatched logprobs instead of silently training REINFORCE", () => {
    expect(() =>
      buildSequences([{ promptTokenIds: [1], completionTokenIds: [2], completionLogprobs: null }]),
    ).toThrow(TrainingSampleError);
    expect(() =>
      buildSequences([{ promptTokenIds: [1], completionTokenIds: [2, 3], completionLogprobs: [-1] }]),
    ).toThrow(/2 completion tokens but 1 logprobs/);
    expect(() => buildSequences([])).toThrow(TrainingSampleError);
  });

  it("refuses a non-finite reward", () => {
    const turn = { promptTokenIds: [1], completionTokenIds: [2], completionLogprobs: [-1] };
    expect(() => buildTrainSample("t", Number.NaN, [turn])).toThrow(/not a finite/);
    expect(buildTrainSample("t", 0.5, [turn]).sequences[0]!.tokens).toEqual([1, 2]);
  });
});
