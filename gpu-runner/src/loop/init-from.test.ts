/**
 * A forked train run (RunContext.initFrom) in the run loop, against a fake engine and the real sandbox: step 0's
 * eval and step 1's rollouts use the parent's checkpoint, only step 1's /train carries init_from, run.started
 * records it, and a parent checkpoint the engine does not have fails the run before anything is sampled.
 */
import { describe, expect, it } from "vitest";
import {
  RunConfig,
  RunEvent,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type InitFrom,
  type TrainRequest,
  type TrainStreamLine,
} from "../../../contracts";
import { compileExperiment } from "../experiment/compile";
import { parseTasks } from "../experiment/tasks";
import { createJudgeClient } from "../judge/judge-client";
import { initFromProblem } from "./init-from";
import { executeRun, type RunEngine } from "./run-loop";

const SCENARIO = `
import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext<{ word: string }>) {
  return (await ctx.chat([{ role: "user", content: "say " + ctx.task.word }])).content;
}`;
const REWARD = `export default function reward({ output }: { output: string }) { return output.length % 2; }`;

/** Checkpoints per run; chat answers with the seed so groups have reward variance. */
class Engine implements RunEngine {
  steps = new Map<string, number[]>([["parent", [1, 2, 3]]]);
  chats: ChatCompletionRequest[] = [];
  trains: TrainRequest[] = [];

  async chat(body: ChatCompletionRequest): Promise<ChatCompletionResponse> {
    this.chats.push(body);
    const content = "x".repeat(1 + ((body.seed ?? 0) % 3));
    const ids = Array.from(content, () => 120);
    return {
      id: "x",
      object: "chat.completion",
      created: 0,
      model: body.model,
      prompt_token_ids: [1, 2],
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", token_ids: ids, logprobs: { content: ids.map(() => ({ token: "x", logprob: -1 })) } }],
      usage: { prompt_tokens: 2, completion_tokens: ids.length, total_tokens: 2 + ids.length },
    };
  }

  async *train(body: TrainRequest): AsyncGenerator<TrainStreamLine, void, undefined> {
    this.trains.push(body);
    this.steps.set(body.run_id, [...(this.steps.get(body.run_id) ?? []), body.step]);
    yield {
      type: "result",
      metrics: { loss: 0, grad_norm: 0, kl: 0, clip_fraction: 0, entropy: 0, probs_corr: 1, trained_tokens: 1, groups_submitted: 1, groups_trainable: 1, skipped: false, duration_s: 0 },
      checkpoint: { step: body.step, path: `runs/${body.run_id}/checkpoints/${body.step}`, size_bytes: 1 },
      token_logprobs: {},
    };
  }

  async latestStep(runId: string): Promise<number> {
    return Math.max(0, ...(this.steps.get(runId) ?? []));
  }

  async checkpoints(runId: string) {
    return (this.steps.get(runId) ?? []).map((step) => ({ step, path: `runs/${runId}/checkpoints/${step}`, size_bytes: 1 }));
  }
}

async function fork(engine: Engine, initFrom: InitFrom, resume = false) {
  const compiled = await compileExperiment({ "scenario.ts": SCENARIO, "reward.ts": REWARD });
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
  const tasks = parseTasks(['{"word":"a"}', '{"word":"b"}', '{"word":"v","split":"val"}'].join("\n"));
  if (!tasks.ok) throw new Error("tasks");
  const config = RunConfig.parse({ num_steps: 2, groups_per_step: 1, rollouts_per_group: 3, eval_every: 2 });
  const events: RunEvent[] = [];
  const status = await executeRun({
    runId: "child",
    kind: "train",
    config,
    compiled: compiled.compiled,
    exports: { scenario: true, reward: true, groupReward: false, taskSchema: "none" },
    tasks: { train: tasks.train, val: tasks.val },
    resume,
    initFrom,
    engine,
    judge: createJudgeClient(config.judge, config.model, engine),
    waitForEngine: async () => {},
    signal: new AbortController().signal,
    emit: (input) => void events.push(RunEvent.parse({ ...input, run_id: "child", seq: events.length + 1, ts: Date.now() })),
  });
  return { status, events };
}

describe("a forked train run", () => {
  it("evaluates and samples its first step from the parent's checkpoint and trains on from its adapter", async () => {
    const engine = new Engine();
    const initFrom = { run_id: "parent", step: 2, load_optimizer: false };
    const { status, events } = await fork(engine, initFrom);
    expect(status).toBe("completed");
    expect(events[0]).toMatchObject({ type: "run.started", payload: { init_from: initFrom, resumed_from_step: 0 } });
    const evals = events.flatMap((e) => (e.type === "eval.finished" ? [e.payload] : []));
    expect(evals.map((e) => [e.step, e.model])).toEqual([[0, "parent@2"], [2, "child@2"]]);
    const models = (step: number) => new Set(events.flatMap((e) => (e.type === "rollout.finished" && e.payload.split === "train" && e.payload.step === step ? [e.payload.model] : [])));
    expect([...models(1)]).toEqual(["parent@2"]);
    expect([...models(2)]).toEqual(["child@1"]);
    // Only step 1 asks the engine to start from the parent; step 2 continues from the fork's own checkpoint 1.
    expect(engine.trains.map((t) => [t.step, t.init_from ?? null])).toEqual([[1, initFrom], [2, null]]);
  });

  it("fails before sampling when the engine does not have the parent's checkpoint", async () => {
    const engine = new Engine();
    const { status, events } = await fork(engine, { run_id: "parent", step: 7, load_optimizer: false });
    expect(status).toBe("failed");
    expect(engine.chats).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ payload: { error: "init_from.step: run parent has no checkpoint at step 7 on this runner (it has 1, 2, 3; it may have been deleted)" } });
  });

  it("a resumed fork that already trained continues from its own checkpoints, not the parent's", async () => {
    const engine = new Engine();
    engine.steps.set("child", [1]);
    const { status } = await fork(engine, { run_id: "parent", step: 9, load_optimizer: false }, true);
    expect(status).toBe("completed"); // the parent's step 9 is never needed again
    expect(engine.trains.map((t) => [t.step, t.init_from ?? null])).toEqual([[2, null]]);
    expect(engine.chats.filter((c) => c.temperature !== 0).every((c) => c.model === "child@1")).toBe(true);
  });

  it("initFromProblem: null when the engine cannot be asked yet, unless strict", async () => {
    const down = { checkpoints: async () => Promise.reject(new Error("engine is loading")) };
    const init = { run_id: "p", step: 1, load_optimizer: false };
    expect(await initFromProblem(down, init, { strict: false })).toBeNull();
    await expect(initFromProblem(down, init, { strict: true })).rejects.toThrow("engine is loading");
    expect(await initFromProblem({ checkpoints: async () => [] }, init, { strict: true })).toMatch(/it has none/);
  });
});
