import { describe, expect, it } from "vitest";
import type { Rollout } from "./run-state";
import { flagHref } from "@/features/flags";
import { EMPTY_FILTER, filterFromParams, filterRollouts, filterToParams, isFilterActive, rolloutTags, tagCounts, type RolloutFilter } from "./rollout-filter";
import { summariseTrajectory } from "../rollout-summary";

function rollout(over: Partial<Rollout> & { id: string }): Rollout {
  return {
    step: 0,
    group: 0,
    task_index: 0,
    split: "train",
    task: { prompt: "say hi" },
    messages: [{ role: "user", content: "say hi" }, { role: "assistant", content: "hello there" }],
    reply: "hello there",
    reward: 1,
    metrics: { turns: 1 },
    error: null,
    model: "m",
    tokens: { prompt: 3, completion: 2 },
    timings: { started_at: 0, duration_ms: 10, model_ms: 5 },
    logs: [],
    seq: 1,
    ...over,
  };
}

const rs: Rollout[] = [
  rollout({ id: "a", step: 1, reward: 0.2, task: { prompt: "add 2+2", difficulty: "easy", tags: ["math"] } }),
  rollout({ id: "b", step: 1, reward: 0.9, metrics: { turns: 2, exact: 1 } }),
  rollout({
    id: "c",
    step: 2,
    reward: null,
    error: { kind: "timeout", message: "ran past 30 s" },
    messages: [{ role: "assistant", content: null, tool_calls: [{ id: "t1", type: "function", function: { name: "search", arguments: '{"q":"Paris"}' } }] }],
  }),
  rollout({ id: "d", step: 3, split: "val", reward: 0.5, error: { kind: "reward", message: "NaN" } }),
];
const ids = (f: Partial<RolloutFilter>) => filterRollouts(rs, { ...EMPTY_FILTER, ...f }).map((r) => r.id);

describe("rollout filter", () => {
  it("matches nothing away when empty", () => {
    expect(isFilterActive(EMPTY_FILTER)).toBe(false);
    expect(ids({})).toEqual(["a", "b", "c", "d"]);
  });

  it("filters by reward range (inclusive; a rollout without a reward never matches a bound)", () => {
    expect(ids({ rewardMin: 0.5 })).toEqual(["b", "d"]);
    expect(ids({ rewardMax: 0.5 })).toEqual(["a", "d"]);
    expect(ids({ rewardMin: 0.3, rewardMax: 0.6 })).toEqual(["d"]);
  });

  it("filters by error presence and kind, split, step and ids", () => {
    expect(ids({ error: "error" })).toEqual(["c", "d"]);
    expect(ids({ error: "ok" })).toEqual(["a", "b"]);
    expect(ids({ error: "timeout" })).toEqual(["c"]);
    expect(ids({ split: "val" })).toEqual(["d"]);
    expect(ids({ step: 1 })).toEqual(["a", "b"]);
    expect(ids({ ids: ["d", "a", "zzz"] })).toEqual(["a", "d"]);
    expect(ids({ step: 1, rewardMin: 0.5 })).toEqual(["b"]);
  });

  it("searches message text, tool calls, the task and the error, case-insensitively", () => {
    expect(ids({ text: "HELLO" })).toEqual(["a", "b", "d"]);
    expect(ids({ text: "paris" })).toEqual(["c"]);
    expect(ids({ text: "2+2" })).toEqual(["a"]);
    expect(ids({ text: "past 30" })).toEqual(["c"]);
  });

  it("a rollout held as a summary (no messages) matches a text only by the server's answer for that same text", () => {
    const summaries = rs.map(({ messages, logs: _l, model: _m, seq: _s, ...r }, i) => ({ ...summariseTrajectory({ ...r, messages: messages!, model: "m", logs: [] }), seq: i + 1 }));
    const text = (t: string, matches: { text: string; seqs: number[] } | null) =>
      filterRollouts(summaries, { ...EMPTY_FILTER, text: t }, matches && { text: matches.text, seqs: new Set(matches.seqs) }).map((r) => r.id);
    expect(text("hello", null)).toEqual([]);
    expect(summaries.every((r) => !("messages" in r))).toBe(true);
    expect(text("hello", { text: "hello", seqs: [1, 2] })).toEqual(["a", "b"]);
    expect(text("HELLO ", { text: "hello", seqs: [] })).toEqual([]);
    // An answer for another text (the box changed since) matches nothing.
    expect(text("hell", { text: "hello", seqs: [1] })).toEqual([]);
    // Whole and summary rollouts mixed (a live run): the whole ones are searched on the page.
    expect(filterRollouts([summaries[0]!, { ...rs[2]!, seq: 9 }], { ...EMPTY_FILTER, text: "paris" }, { text: "paris", seqs: new Set() }).map((r) => r.id)).toEqual(["c"]);
  });

  it("derives tags from the task's tags and short fields and from user metrics", () => {
    expect(rolloutTags(rs[0]!)).toEqual(expect.arrayContaining(["math", "difficulty=easy", "prompt=add 2+2"]));
    expect(rolloutTags(rs[1]!)).toContain("metric:exact");
    expect(rolloutTags(rs[1]!)).not.toContain("metric:turns");
    expect(ids({ tag: "math" })).toEqual(["a"]);
    expect(ids({ tag: "metric:exact" })).toEqual(["b"]);
    expect(tagCounts(rs)[0]).toEqual({ tag: "prompt=say hi", count: 3 });
  });

  it("round-trips through the address and keeps other parameters", () => {
    const f: RolloutFilter = { ids: ["x", "y"], step: 7, steps: [7, 8], split: "train", rewardMin: 0, rewardMax: 0.5, error: "timeout", tag: "difficulty=hard", text: "a b" };
    const params = filterToParams(f, new URLSearchParams("tab=rollouts&step=2"));
    expect(params.get("tab")).toBe("rollouts");
    expect(filterFromParams(params)).toEqual(f);
    expect(filterToParams(EMPTY_FILTER, new URLSearchParams("tab=groups&step=3&q=x")).toString()).toBe("tab=groups");
  });

  it("reads a pathology flag's link and ignores malformed values", () => {
    expect(filterFromParams(new URLSearchParams("tab=rollouts&rollouts=id1,id2"))).toEqual({ ...EMPTY_FILTER, ids: ["id1", "id2"] });
    expect(filterFromParams(new URLSearchParams("step=7")).step).toBe(7);
    expect(filterFromParams(new URLSearchParams("step=-1&reward_min=abc&error=bogus&split=x&rollouts=,&steps=a,-2"))).toEqual(EMPTY_FILTER);
  });

  it("a flag on trainer metrics (steps, no rollout ids) selects those steps' train rollouts", () => {
    const href = flagHref("run1", { id: "f1", steps: [7, 8], rolloutIds: [] });
    const f = filterFromParams(new URL(href, "http://x").searchParams);
    expect(f.steps).toEqual([7, 8]);
    const rs = [
      { id: "a", step: 7, split: "train" },
      { id: "b", step: 7, split: "val" },
      { id: "c", step: 9, split: "train" },
      { id: "d", step: 8, split: "train" },
    ].map((r) => rollout({ id: r.id, step: r.step, split: r.split as "train" | "val" }));
    expect(filterRollouts(rs, f).map((r) => r.id)).toEqual(["a", "d"]);
  });
});
