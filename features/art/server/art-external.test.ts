/** ART trajectories → the runner's external training input: the sampled ids recovered from the Choice's logprobs. */
import { describe, expect, it } from "vitest";
import { ArtTrajectoryGroup } from "../schema";
import { ArtTrainInputError, externalGroupsOf, sampledIds } from "./art-external";

const choice = (tokens: string[], logprobs = tokens.map(() => -0.5)) => ({
  finish_reason: "stop",
  index: 0,
  message: { role: "assistant", content: "hi" },
  logprobs: { content: tokens.map((token, i) => ({ token, logprob: logprobs[i]!, bytes: null, top_logprobs: [] })) },
});

describe("sampledIds", () => {
  it("reads token_id:<id> tokens as the sampled ids, with their logprobs", () => {
    const c = ArtTrajectoryGroup.parse({ trajectories: [{ messages_and_choices: [{ role: "user", content: "x" }, choice(["token_id:12", "token_id:7"], [-0.1, -2])] }] });
    const item = c.trajectories[0]!.messages_and_choices[1]!;
    expect(sampledIds(item as never)).toEqual({ token_ids: [12, 7], logprobs: [-0.1, -2] });
  });

  it("a choice whose tokens are text (sampled elsewhere) or that has no logprobs has no ids: re-tokenised later", () => {
    expect(sampledIds(choice(["Hel", "lo"]) as never)).toEqual({ token_ids: null, logprobs: null });
    expect(sampledIds(choice(["token_id:1", "lo"]) as never)).toEqual({ token_ids: null, logprobs: null });
    expect(sampledIds({ ...choice([]), logprobs: null } as never)).toEqual({ token_ids: null, logprobs: null });
  });
});

describe("externalGroupsOf", () => {
  it("keeps each history's order, messages as messages and choices as sampled replies, under the rollout ids given", () => {
    const group = ArtTrajectoryGroup.parse({
      trajectories: [
        {
          reward: 1,
          messages_and_choices: [{ role: "system", content: "s" }, { role: "user", content: "u" }, choice(["token_id:5"]), { role: "user", content: "again" }, choice(["token_id:9"])],
          tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }],
          additional_histories: [{ messages_and_choices: [{ role: "user", content: "h" }, choice(["token_id:3"])] }],
        },
      ],
    });
    const [g] = externalGroupsOf([group], [["rollout-a"]]);
    const t = g!.trajectories[0]!;
    expect(t.id).toBe("rollout-a");
    expect(t.reward).toBe(1);
    expect(t.histories).toHaveLength(2);
    expect(t.histories[0]!.tools?.[0]?.function.name).toBe("f");
    expect(t.histories[0]!.items.map((i) => ("message" in i ? i.message.role : `sampled:${i.sampled.token_ids?.join(",")}`))).toEqual(["system", "user", "sampled:5", "user", "sampled:9"]);
    expect(t.histories[1]!.items.map((i) => ("sampled" in i ? i.sampled.token_ids : null))).toEqual([null, [3]]);
  });

  it("a tool that is not OpenAI's shape is refused, naming where it is", () => {
    const group = ArtTrajectoryGroup.parse({ trajectories: [{ messages_and_choices: [{ role: "user", content: "u" }], tools: [{ name: "f" }] }] });
    expect(() => externalGroupsOf([group], [["r"]])).toThrow(ArtTrainInputError);
    try {
      externalGroupsOf([group], [["r"]]);
    } catch (err) {
      expect((err as ArtTrainInputError).param).toMatch(/^trajectory_groups\[0\]\.trajectories\[0\]\.tools\[0\]/);
    }
  });
});
