/**
 * Re-score with real parts: the runner's compile and check (TypeScript, esbuild, config, tasks), the real
 * sandbox processes and isolates, the say-the-word template's files. The only stand-in is the engine the
 * judge client would call (a function returning a chat completion).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RunConfig, type ChatCompletionRequest, type ChatCompletionResponse, type ExperimentFiles, type RescoreTrajectory } from "../../../contracts";
import type { EngineClient } from "../engine/client";
import { compileExperiment } from "../experiment/compile";
import { executeRollout } from "../rollout/execute";
import { NO_MCP } from "../rollout/run-mcp";
import { rescoreTrajectories } from "./rescore";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATE), "utf8");
const FILES: ExperimentFiles = {
  "scenario.ts": read("scenario.ts"),
  "reward.ts": read("reward.ts"),
  "tasks.jsonl": read("tasks.jsonl"),
  "config.json": JSON.stringify({ ...JSON.parse(read("config.json")), limits: { cpu_timeout_ms: 300, rollout_timeout_ms: 3_000 } }),
};

/** A trajectory as the web tier sends it: the stored task, messages, and the scenario's recorded output. */
function traj(id: string, word: string, reply: string, group = 0, split: "train" | "val" = "train"): RescoreTrajectory {
  return {
    id,
    split,
    step: 0,
    group,
    task: { word },
    output: reply,
    messages: [
      { role: "system", content: "Answer with one word." },
      { role: "user", content: `Say the word ${word}.` },
      { role: "assistant", content: reply },
    ],
  };
}

const TRAJ = [traj("r:s0:g0:r0", "apple", "Apple."), traj("r:s0:g0:r1", "river", "River"), traj("r:s0:g0:r2", "candle", "The word is candle.")];

/** An engine whose judge answers `content` (counting the calls). */
function judgeEngine(content: string) {
  const calls: unknown[] = [];
  const engine: Pick<EngineClient, "chat"> = {
    chat: async (request) => {
      calls.push(request);
      return {
        id: "c",
        object: "chat.completion",
        created: 0,
        model: request.model,
        choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
      } as unknown as ChatCompletionResponse;
    },
  };
  return { engine, calls };
}

const noEngine = judgeEngine("unused").engine;

describe("rescoreTrajectories", () => {
  it("a rollout records its scenario output, and re-scoring it with the same reward gives the run's reward", async () => {
    const compiled = await compileExperiment(FILES);
    if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
    const reply = "The word is candle.";
    const ids = Array.from(reply, (c) => c.charCodeAt(0));
    const engine: Pick<EngineClient, "chat"> = {
      chat: async (body: ChatCompletionRequest) =>
        ({
          id: "x",
          object: "chat.completion",
          created: 0,
          model: body.model,
          prompt_token_ids: [1, 2, 3],
          choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop", token_ids: ids, logprobs: { content: ids.map(() => ({ token: "t", logprob: -0.5 })) } }],
          usage: { prompt_tokens: 3, completion_tokens: ids.length, total_tokens: 3 + ids.length },
        }) as ChatCompletionResponse,
    };
    const done = await executeRollout({
      services: { engine, judge: { description: "none", chat: () => Promise.reject(new Error("no judge")) }, mcp: NO_MCP },
      compiled: compiled.compiled,
      runId: "r",
      config: RunConfig.parse(JSON.parse(FILES["config.json"])),
      task: { index: 2, line: 3, split: "train", data: { word: "candle" } },
      split: "train",
      step: 0,
      group: 1,
      rolloutIndex: 0,
      model: "m",
    });
    const t = done.trajectory;
    expect(t.error).toBeNull();
    expect(t.output).toBe(reply);
    // Per-turn figures (shown in the transcript): the assistant message the call sampled, its tokens, latency.
    expect(t.turns).toEqual([{ message_index: t.messages.length - 1, prompt_tokens: 3, completion_tokens: ids.length, model_ms: expect.any(Number), finish_reason: "stop" }]);
    expect(t.messages[t.turns![0]!.message_index]!.content).toBe(reply);
    const res = await rescoreTrajectories(
      { workspace_id: "ws-test", files: FILES, kind: "train", trajectories: [{ id: t.id, split: t.split, step: t.step, group: t.group, task: t.task, output: t.output, messages: t.messages }] },
      { runsDir: "/nonexistent", engine: noEngine },
    );
    if (!res.ok) throw new Error(res.error);
    expect(res.results[0]!.reward).toBe(t.reward);
    expect(t.reward).toBe(0.25);
  });

  it("runs the unedited template reward over recorded outputs: the rewards the run gave", async () => {
    const res = await rescoreTrajectories({ workspace_id: "ws-test", files: FILES, kind: "train", trajectories: TRAJ }, { runsDir: "/nonexistent", engine: noEngine });
    if (!res.ok) throw new Error(res.error);
    expect(res.results.map((r) => [r.id, r.reward, r.error])).toEqual([
      ["r:s0:g0:r0", 1, null],
      ["r:s0:g0:r1", 1, null],
      ["r:s0:g0:r2", 0.25, null],
    ]);
    expect(res.results[2]!.metrics).toEqual({ exact: 0, contains: 1, words: 4 });
    expect(res.scale_rewards).toBe(true);
    expect(res.group_reward).toBe(false);
  });

  it("a reward that throws on one trajectory: that one errors at reward.ts:line, the others are scored", async () => {
    const reward = [
      `import type { RewardInput } from "rollbook";`,
      `import type { Task } from "./scenario";`,
      `export default function reward({ task, output }: RewardInput<Task, string>) {`,
      `  if (task.word === "river") throw new Error("no rivers today");`,
      `  return output.length;`,
      `}`,
    ].join("\n");
    const res = await rescoreTrajectories({ workspace_id: "ws-test", files: { ...FILES, "reward.ts": reward }, kind: "train", trajectories: TRAJ }, { runsDir: "/nonexistent", engine: noEngine });
    if (!res.ok) throw new Error(res.error);
    const [a, b, c] = res.results;
    expect(a).toMatchObject({ reward: 6, error: null });
    expect(c).toMatchObject({ reward: 19, error: null });
    expect(b!.reward).toBeNull();
    expect(b!.error).toMatchObject({ kind: "reward", message: "the reward function threw: no rivers today" });
    expect(b!.error!.stack).toMatch(/reward\.ts:4:\d+/);
  });

  it("a reward that loops forever on one trajectory hits the CPU limit there only", async () => {
    const reward = `export default function reward({ output }: { output: string }) {\n  while (output === "River") {}\n  return 0.5;\n}\n`;
    const res = await rescoreTrajectories({ workspace_id: "ws-test", files: { ...FILES, "reward.ts": reward }, kind: "train", trajectories: TRAJ }, { runsDir: "/nonexistent", engine: noEngine });
    if (!res.ok) throw new Error(res.error);
    expect(res.results.map((r) => r.reward)).toEqual([0.5, null, 0.5]);
    expect(res.results[1]!.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("limits.cpu_timeout_ms") });
  });

  it("a syntax error comes back as diagnostics at its file and line, like validate", async () => {
    const res = await rescoreTrajectories(
      { workspace_id: "ws-test", files: { ...FILES, "reward.ts": "export default function reward() {\n  return (1 +;\n}\n" }, kind: "train", trajectories: TRAJ },
      { runsDir: "/nonexistent", engine: noEngine },
    );
    expect(res.ok).toBe(false);
    if (res.ok) return;
    expect(res.diagnostics[0]).toMatchObject({ file: "reward.ts", line: 2 });
    expect(res.error).toMatch(/^reward\.ts:2:\d+: /);
  });

  it("a groupReward with a judge re-scores each training group together, as the loop does", async () => {
    const reward = [
      `import { judgeChat, type GroupRewardFn } from "rollbook";`,
      `export default function reward({ output }: { output: string }) { return output.length; }`,
      `export const groupReward: GroupRewardFn<unknown, string> = async ({ rollouts }) => {`,
      `  const verdict = await judgeChat([{ role: "user", content: "how good is the first?" }]);`,
      `  return rollouts.map((r, i) => (i === 0 ? Number(verdict.content) : r.reward / 100));`,
      `};`,
    ].join("\n");
    const { engine, calls } = judgeEngine("0.75");
    const trajectories = [traj("r:s0:g0:r10", "apple", "Apple."), traj("r:s0:g0:r2", "river", "River"), traj("r:s0:g1:r0", "candle", "candle", 1), traj("r:eval0:g0:r0", "apple", "x", 0, "val")];
    const res = await rescoreTrajectories({ workspace_id: "ws-test", files: { ...FILES, "reward.ts": reward }, kind: "train", trajectories }, { engine, runsDir: "/nonexistent" });
    if (!res.ok) throw new Error(res.error);
    expect(res.group_reward).toBe(true);
    // Group 0 in the loop's (numeric id) order: r2 first, so r2 takes the judge's score.
    expect(res.results.map((r) => r.reward)).toEqual([0.06, 0.75, 0.75, 1]);
    expect(res.results[0]!.metrics.independent_reward).toBe(6);
    expect(res.results[3]!.metrics.independent_reward).toBeUndefined(); // validation: no group reward
    expect(calls).toHaveLength(2);
  });

  it("trajectories past the time budget come back 'not re-scored', not as a failed call", async () => {
    const files = { ...FILES, "config.json": FILES["config.json"].replace('"cpu_timeout_ms":300', '"cpu_timeout_ms":20000').replace('"rollout_timeout_ms":3000', '"rollout_timeout_ms":30000'), "reward.ts": "export default function reward() {\n  for (;;) {}\n}\n" };
    const many = Array.from({ length: 40 }, (_, i) => traj(`r:s0:g0:r${i}`, "apple", "apple"));
    const t0 = Date.now();
    const res = await rescoreTrajectories({ workspace_id: "ws-test", files, kind: "train", trajectories: many }, { runsDir: "/nonexistent", engine: noEngine, budgetMs: 300 });
    if (!res.ok) throw new Error(res.error);
    // Without the budget: 40 rewards × 20 s of CPU over 16 sandboxes, close to a minute.
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(res.results).toHaveLength(40);
    expect(res.results.filter((r) => r.reward === null && r.error?.message.includes("time budget of 0.3 s"))).toHaveLength(40);
  });
});
