import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { appendTokenLine } from "../events/token-log";
import { appendTrainLogprobs, trainLogprobLines } from "../events/train-logprob-log";
import { RolloutTokensNotFound, rolloutTokens } from "./rollout-tokens";

const seq = (tokens: number[], mask: (0 | 1)[], logprobs: number[]) => ({ tokens, mask, logprobs });

describe("rollout tokens (runner files → token view shape)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-rollout-tokens-"));
  const fail = (m: string) => {
    throw new Error(m);
  };
  // Two sequences (a template rewrote the turns); the second sampled two tokens. A zero-variance rollout too.
  appendTokenLine(dir, "run1", { trajectory_id: "s1-0-0", sequences: [seq([5, 6, 7], [0, 0, 1], [0, 0, -0.5]), seq([5, 8, 9, 10], [0, 1, 0, 1], [0, -1, 0, -2])] }, fail);
  appendTokenLine(dir, "run1", { trajectory_id: "s1-1-0", sequences: [seq([5, 6], [0, 1], [0, -0.25])] }, fail);
  appendTokenLine(dir, "run1", { trajectory_id: "eval-0", sequences: [seq([5, 6], [0, 1], [0, -0.25])] }, fail);
  const groups = [
    { samples: [{ trajectory_id: "s1-0-0", reward: 1, sequences: [] as never[] }] },
    { samples: [{ trajectory_id: "s1-1-0", reward: 1, sequences: [] as never[] }] },
  ];
  appendTrainLogprobs(dir, "run1", trainLogprobLines(1, groups, { "s1-0-0": { advantage: 0.8, sequences: [[-0.6], [-1, -2.1]] } }), fail);
  const detok = async (ids: number[]) => ids.map((id) => (id === 9 ? "\n" : `t${id}`));

  it("joins sampled tokens with the trainer's logprobs in order, per sequence, with ratios", async () => {
    const r = await rolloutTokens(dir, "run1", "s1-0-0", detok);
    expect(r.training).toEqual({ status: "trained", step: 1, advantage: 0.8 });
    expect(r.sequences.map((s) => s.tokens.map((t) => t.text))).toEqual([["t5", "t6", "t7"], ["t5", "t8", "\n", "t10"]]);
    const [a, b] = r.sequences;
    expect(a!.tokens[0]).toMatchObject({ sampled: false, trained: false, sampling_logprob: null, trainer_logprob: null, ratio: null });
    expect(a!.tokens[2]).toMatchObject({ sampled: true, trained: true, sampling_logprob: -0.5, trainer_logprob: -0.6 });
    expect(a!.tokens[2]!.ratio).toBeCloseTo(Math.exp(-0.1), 12);
    expect(b!.tokens.map((t) => t.trainer_logprob)).toEqual([null, -1, null, -2.1]);
    expect(b!.tokens[3]!.ratio).toBeCloseTo(Math.exp(-0.1), 12);
  });

  it("a re-tokenised sequence (an ART reply sampled without its ids) says so, with no sampling logprob or ratio", async () => {
    appendTokenLine(dir, "run1", { trajectory_id: "art-1", sequences: [{ ...seq([5, 6, 7], [0, 1, 1], [0, 0, 0]), recomputed_logprobs: true }] }, fail);
    appendTrainLogprobs(dir, "run1", trainLogprobLines(2, [{ samples: [{ trajectory_id: "art-1", reward: 1, sequences: [] as never[] }] }], { "art-1": { advantage: 1, sequences: [[-0.3, -0.4]] } }), fail);
    const r = await rolloutTokens(dir, "run1", "art-1", detok);
    expect(r.sequences[0]!.retokenized).toBe(true);
    expect(r.sequences[0]!.tokens[1]).toMatchObject({ sampled: true, trained: true, sampling_logprob: null, trainer_logprob: -0.3, ratio: null });
    const exact = await rolloutTokens(dir, "run1", "s1-0-0", detok);
    expect(exact.sequences.map((s) => s.retokenized)).toEqual([false, false]);
  });

  it("a zero-variance group's rollout: sampled, not trained, no trainer logprob; a rollout never submitted: no record", async () => {
    const flat = await rolloutTokens(dir, "run1", "s1-1-0", detok);
    expect(flat.training).toEqual({ status: "not_trained", step: 1, advantage: null });
    expect(flat.sequences[0]!.tokens[1]).toMatchObject({ sampled: true, trained: false, sampling_logprob: -0.25, trainer_logprob: null, ratio: null });
    const evalRollout = await rolloutTokens(dir, "run1", "eval-0", detok);
    expect(evalRollout.training.status).toBe("no_record");
  });

  it("a sampled token's role comes from the log's scaffolding marks; prompt tokens and a log without them have none", async () => {
    appendTokenLine(dir, "run1", { trajectory_id: "tool-1", sequences: [{ ...seq([5, 6, 7, 8], [0, 1, 1, 1], [0, -1, -1, -1]), scaffolding: [0, 1, 0, 1] }] }, fail);
    const r = await rolloutTokens(dir, "run1", "tool-1", detok);
    expect(r.sequences[0]!.tokens.map((t) => t.role)).toEqual([null, "scaffolding", "content", "scaffolding"]);
    const old = await rolloutTokens(dir, "run1", "s1-1-0", detok);
    expect(old.sequences[0]!.tokens.map((t) => t.role)).toEqual([null, null]);
  });

  it("a rollout without a token record is not found (not an empty view); the id must match exactly", async () => {
    await expect(rolloutTokens(dir, "run1", "s1-0", detok)).rejects.toBeInstanceOf(RolloutTokensNotFound);
    await expect(rolloutTokens(dir, "no-such-run", "s1-0-0", detok)).rejects.toBeInstanceOf(RolloutTokensNotFound);
  });
});
