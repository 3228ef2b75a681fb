/** ART trajectories → Rollbook rollouts and events, and field names in errors (pure). */
import { describe, expect, it } from "vitest";
import { RunEvent, type Trajectory } from "@contracts";
import { LogBody } from "../schema";
import { fieldPath, issueMessage } from "./art-errors";
import { logEvents } from "./art-log";

const choice = (content: string | null, tool = false) => ({
  finish_reason: tool ? "tool_calls" : "stop",
  index: 0,
  logprobs: { content: [{ token: "a", logprob: -1, bytes: [97], top_logprobs: [] }, { token: "b", logprob: -2, bytes: null, top_logprobs: [] }] },
  message: { role: "assistant", content, tool_calls: tool ? [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] : null },
});

const body = (split: "train" | "val") =>
  LogBody.parse({
    split,
    trajectory_groups: [
      {
        trajectories: [
          {
            messages_and_choices: [{ role: "developer", content: "sys" }, { role: "user", content: [{ type: "text", text: "hi" }, { type: "image_url" }] }, choice(null, true), { role: "tool", tool_call_id: "c1", content: null }, choice("done")],
            reward: 1,
            metrics: { ok: true, n: 2 },
            additional_histories: [{ messages_and_choices: [{ role: "user", content: "judge?" }, choice("yes")] }],
          },
          { messages_and_choices: [choice("x")], reward: 0 },
        ],
        exceptions: [{ type: "ValueError", message: "bad", traceback: "tb" }],
      },
    ],
  });

describe("ART log → events", () => {
  it("a train log is one step: rollouts (exceptions as failed ones) then step.finished, numbered after lastSeq", () => {
    const { events, step, rollouts } = logEvents({ id: "r1", attempt: 2, baseModel: "base" }, body("train"), { lastSeq: 10, currentStep: 3, now: 1_000 });
    expect(step).toBe(4);
    expect(rollouts).toBe(3);
    expect(events.map((e) => [e.seq, e.type, e.attempt])).toEqual([
      [11, "rollout.finished", 2],
      [12, "rollout.finished", 2],
      [13, "rollout.finished", 2],
      [14, "step.finished", 2],
    ]);
    for (const e of events) expect(RunEvent.safeParse(e).success).toBe(true);
    const t = events[0]!.payload as { messages: { role: string; content: string | null }[]; turns: { message_index: number; completion_tokens: number }[]; metrics: Record<string, number>; tokens: { completion: number } };
    expect(t.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "hi[image_url]" },
      { role: "assistant", content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
      { role: "tool", content: "", tool_call_id: "c1" },
      { role: "assistant", content: "done" },
      { role: "system", content: "— additional history 1 of 1 —" },
      { role: "user", content: "judge?" },
      { role: "assistant", content: "yes" },
    ]);
    expect(t.turns.map((x) => x.message_index)).toEqual([2, 4, 7]);
    expect(t.tokens.completion).toBe(6);
    expect(t.metrics).toEqual({ ok: 1, n: 2 });
    expect(events[2]!.payload).toMatchObject({ reward: null, error: { kind: "thrown", message: "ValueError: bad", stack: "tb" } });
    expect(events[3]!.payload).toMatchObject({ step: 4, rollouts: 3, reward_mean: 0.5, exception_rate: 1 / 3, groups_trainable: 1, trainer: null });
  });

  it("what ART does not send is unknown (null), not 0: prompt counts, model time, durations, the step's times", () => {
    const { events } = logEvents({ id: "r1", attempt: 1, baseModel: "base" }, body("train"), { lastSeq: 0, currentStep: 0, now: 1 });
    const [t, , failed] = events.map((e) => e.payload as Trajectory);
    expect(t!.tokens).toEqual({ prompt: null, completion: 6 });
    expect(t!.turns!.every((x) => x.prompt_tokens === null && x.model_ms === null)).toBe(true);
    expect(t!.timings).toMatchObject({ duration_ms: null, model_ms: null });
    expect(failed!.timings).toMatchObject({ duration_ms: null, model_ms: null });
    expect(events.at(-1)!.payload).toMatchObject({ rollout_s: null, train_s: null, step_s: null, tokens_per_s: null });
    // A rollout that logs its own duration (seconds) has one.
    const timed = LogBody.parse({ split: "train", trajectory_groups: [{ trajectories: [{ messages_and_choices: [choice("x")], reward: 1, metrics: { duration: 1.5 } }] }] });
    const one = logEvents({ id: "r1", attempt: 1, baseModel: "base" }, timed, { lastSeq: 0, currentStep: 0, now: 1 }).events[0]!.payload as Trajectory;
    expect(one.timings.duration_ms).toBe(1500);
  });

  it("a val log is an eval of the current step", () => {
    const { events, step } = logEvents({ id: "r1", attempt: 1, baseModel: "base" }, body("val"), { lastSeq: 0, currentStep: 2, now: 1 });
    expect(step).toBe(2);
    expect(events.at(-1)).toMatchObject({ seq: 4, type: "eval.finished", payload: { step: 2, model: "r1@2", rollouts: 3 } });
    expect(events[0]!.payload).toMatchObject({ split: "val", step: 2 });
  });
});

describe("errors name the field as Python indexes it", () => {
  it("paths and messages", () => {
    expect(fieldPath(["trajectory_groups", 2, "trajectories", 0, "reward"])).toBe("trajectory_groups[2].trajectories[0].reward");
    const bad = LogBody.safeParse({ split: "train", trajectory_groups: [{ trajectories: [{ reward: "x" }] }] });
    expect(bad.success).toBe(false);
    expect(issueMessage(bad.error!).message).toBe("trajectory_groups[0].trajectories[0].reward: expected number, received string");
  });
});
