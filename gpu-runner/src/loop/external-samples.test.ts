/** An ART client's trajectories → training samples: each reply's prompt length, the rollouts' prompt counts. */
import { describe, expect, it } from "vitest";
import type { ChatMessage, ExternalTrajectory } from "../../../contracts";
import { externalGroups, type ChatTokenizer } from "./external-samples";

/** A stand-in /tokenize: one id per character of each message, plus 2 for the generation prompt. */
const tok: ChatTokenizer = {
  tokenize: async ({ messages, add_generation_prompt }) => {
    const ids = messages.flatMap((m: ChatMessage) => Array.from(m.content ?? "", (c) => c.charCodeAt(0)));
    return add_generation_prompt ? [...ids, 1, 2] : ids;
  },
};

const reply = (content: string, ids: number[]) => ({ sampled: { message: { role: "assistant" as const, content }, token_ids: ids, logprobs: ids.map(() => -0.5) } });
const user = (content: string) => ({ message: { role: "user" as const, content } });

const trajectory = (id: string, reward: number): ExternalTrajectory => ({
  id,
  reward,
  histories: [
    { tools: null, items: [user("hello"), reply("ab", [9, 9]), user("more")] },
    { tools: null, items: [user("judge"), reply("c", [7])] },
  ],
});

describe("externalGroups' prompt counts", () => {
  it("counts each reply's prompt as the engine tokenised it, in reply order across histories", async () => {
    const built = await externalGroups([{ trajectories: [trajectory("t1", 1), trajectory("t2", 0)] }], tok, false);
    // "hello" + generation prompt = 7; "judge" + generation prompt = 7.
    expect(built.promptTokens).toEqual({ t1: [7, 7], t2: [7, 7] });
    expect(built.groups).toHaveLength(1);
  });

  it("counts the replies of a trajectory that does not train (its group is too small)", async () => {
    const built = await externalGroups([{ trajectories: [trajectory("alone", 1)] }], tok, false);
    expect(built.groups).toHaveLength(0);
    expect(built.promptTokens).toEqual({ alone: [7, 7] });
  });
});
