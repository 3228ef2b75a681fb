/** An ART client's trajectories → training samples: each reply's prompt length, the rollouts' prompt counts. */
import { describe, expect, it } from "vitest";
import type { ChatMessage, ExternalTrajectory } from "../../../contracts";
import { externalGroups, type ChatTokenizer } from "./external-samples";

/**
 * A stand-in /tokenize: one id per character of each message, plus 2 for the generation prompt; the reply
 * sampled as [7] was "served after a prefill" [3, 3] (the engine's record, served_prompts.py).
 */
const PREFILL = [3, 3];
const tok: ChatTokenizer = {
  tokenize: async ({ messages, add_generation_prompt, sampled_token_ids }) => {
    const ids = messages.flatMap((m: ChatMessage) => Array.from(m.content ?? "", (c) => c.charCodeAt(0)));
    if (!add_generation_prompt) return { tokens: ids, served: false };
    const forced = sampled_token_ids?.length === 1 && sampled_token_ids[0] === 7;
    return { tokens: [...ids, 1, 2, ...(forced ? PREFILL : [])], served: forced };
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
    // "hello" + generation prompt = 7; "judge" + generation prompt + the forced reply's prefill = 9.
    expect(built.promptTokens).toEqual({ t1: [7, 9], t2: [7, 9] });
    expect(built.groups).toHaveLength(1);
  });

  it("trains a reply the engine served after a prefill on the prompt it fed, prefill included", async () => {
    const built = await externalGroups([{ trajectories: [trajectory("t1", 1), trajectory("t2", 0)] }], tok, false);
    expect(built.servedPromptReplies).toBe(2); // one forced reply per trajectory
    expect(built.exactReplies).toBe(4);
    const judged = built.groups[0]!.samples[0]!.sequences.at(-1)!;
    const judge = Array.from("judge", (c) => c.charCodeAt(0));
    // The sequence is the fed prompt then the sampled id, and only the sampled id is trained.
    expect(judged.tokens).toEqual([...judge, 1, 2, ...PREFILL, 7]);
    expect(judged.mask.slice(0, -1).every((m) => m === 0)).toBe(true);
    expect(judged.mask.at(-1)).toBe(1);
  });

  it("counts the replies of a trajectory that does not train (its group is too small)", async () => {
    const built = await externalGroups([{ trajectories: [trajectory("alone", 1)] }], tok, false);
    expect(built.groups).toHaveLength(0);
    expect(built.promptTokens).toEqual({ alone: [7, 9] });
  });
});
