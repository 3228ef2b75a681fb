/**
 * The run loop against a fake engine (deterministic chat, a /train that records its requests) and the
 * real compiler + isolated-vm sandbox: step sequencing, models per step, evals, exclusion of failed
 * rollouts, resume with no step repeated or skipped, stop and failure.
 */
import { describe, expect, it } from "vitest";
import {
  RunConfig,
  RunEvent,
  type ChatCompletionRequest,
  type ChatCompletionResponse,
  type TrainRequest,
  type TrainStreamLine,
} from "../../../contracts";
import { compileExperiment, type CompiledExperiment } from "../experiment/compile";
import { parseTasks } from "../experiment/tasks";
import { type RunEventInput } from "../events/event-log";
import { createJudgeClient } from "../judge/judge-client";
import { executeRun, type RunContext, type RunEngine } from "./run-loop";

const SCENARIO = `
import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext<{ word: string }>) {
  const r = await ctx.chat([{ role: "user", content: "say " + ctx.task.word }]);
  return r.content;
}`;
const REWARD = `
import type { RewardInput } from "rollbook";
export default function reward({ task, output }: RewardInput<{ word: string }, string>) {
  if (output === "broken") return NaN;
  return output === task.word ? 1 : 0;
}`;
const TASKS = ["a", "b", "c", "d", "e"].map((w) => JSON.stringify({ word: w })).join("\n") + '\n{"word":"v","split":"val"}';

class FakeEngine implements RunEngine {
  chats: ChatCompletionRequest[] = [];
  trains: TrainRequest[] = [];
  latest = new Map<string, number>();
  failTrainAt: number | null = null;
  onTrain: ((step: number) => void) | null = null;

  async chat(body: ChatCompletionRequest): Promise<ChatCompletionResponse> {
    this.chats.push(body);
    const word = String(body.messages.at(-1)?.content ?? "").replace("say ", "");
    // Deterministic in the seed: half the samples say the word, one in seven is "broken" (NaN reward).
    const seed = body.seed ?? 0;
    const content = seed % 7 === 0 ? "broken" : seed % 2 === 0 ? word : "nope";
    const ids = Array.from(content, (c) => c.charCodeAt(0));
    return {
      id: "x",
      object: "chat.completion",
      created: 0,
      model: body.model,
      prompt_token_ids: [1, 2, 3],
      choices: [
        {
          index: 0,
          message: { role: "assistant", content },
          finish_reason: "stop",
          token_ids: ids,
          logprobs: { content: ids.map(() => ({ token: "t", logprob: -0.5 })) },
        },
      ],
      usage: { prompt_tokens: 3, completion_tokens: ids.length, total_tokens: 3 + ids.length },
    };
  }

  async *train(body: TrainRequest): AsyncGenerator<TrainStreamLine, void, undefined> {
    const newest = this.latest.get(body.run_id) ?? 0;
    if (body.step !== newest + 1) throw new Error(`409: step ${body.step} but newest is ${newest}`);
    this.trains.push(body);
    if (this.failTrainAt === body.step) {
      yield { type: "error", message: "CUDA out of memory" };
      return;
    }
    yield { type: "progress", micro_batch: 1, micro_batches: 1, loss: 0.5 };
    this.latest.set(body.run_id, body.step);
    this.onTrain?.(body.step);
    yield {
      type: "result",
      metrics: {
        loss: 0.5, grad_norm: 1, kl: 0, clip_fraction: 0, entropy: 1, probs_corr: 1, trained_tokens: 10,
        groups_submitted: body.groups.length, groups_trainable: body.groups.length, skipped: false, duration_s: 0.01,
      },
      checkpoint: { step: body.step, path: `runs/${body.run_id}/checkpoints/${String(body.step).padStart(4, "0")}`, size_bytes: 1 },
      token_logprobs: {},
    };
  }

  async latestStep(runId: string): Promise<number> {
    return this.latest.get(runId) ?? 0;
  }

  async checkpoints(runId: string) {
    const newest = this.latest.get(runId) ?? 0;
    return Array.from({ length: newest }, (_, i) => ({ step: i + 1, path: `runs/${runId}/checkpoints/${i + 1}`, size_bytes: 1 }));
  }
}

let compiled: CompiledExperiment | null = null;
async function getCompiled(): Promise<CompiledExperiment> {
  if (compiled) return compiled;
  const r = await compileExperiment({ "scenario.ts": SCENARIO, "reward.ts": REWARD });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  compiled = r.compiled;
  return compiled;
}

async function run(
  engine: FakeEngine,
  overrides: Partial<Omit<RunContext, "config">> & { config?: Partial<RunConfig> },
  onEvent?: (e: RunEvent, controller: AbortController) => void,
) {
  const tasks = parseTasks(TASKS);
  if (!tasks.ok) throw new Error("tasks");
  const events: RunEvent[] = [];
  const controller = new AbortController();
  const config = RunConfig.parse({
    num_steps: 3, groups_per_step: 2, rollouts_per_group: 3, max_concurrency: 4, eval_every: 2, ...overrides.config,
  });
  const status = await executeRun({
    runId: "r",
    kind: "train",
    compiled: await getCompiled(),
    exports: { scenario: true, reward: true, groupReward: false, taskSchema: "none" },
    tasks: { train: tasks.train, val: tasks.val },
    resume: false,
    engine,
    judge: createJudgeClient(config.judge, config.model, engine, { runId: "r" }),
    waitForEngine: async () => {},
    signal: controller.signal,
    ...overrides,
    config,
    emit: (input: RunEventInput) => {
      const e = RunEvent.parse({ ...input, run_id: "r", seq: events.length + 1, ts: Date.now() });
      events.push(e);
      onEvent?.(e, controller);
    },
  });
  return { status, events };
}

const types = (events: RunEvent[]) =>
  events.filter((e) => !["rollout.finished", "train.progress", "run.log"].includes(e.type)).map((e) => e.type);

describe("executeRun (train)", () => {
  it("runs steps in order, samples each step from the previous checkpoint, evals at 0, every N and the end", async () => {
    const engine = new FakeEngine();
    const { status, events } = await run(engine, {});
    expect(status).toBe("completed");
    expect(types(events)).toEqual([
      "run.started",
      "eval.finished", // step 0, base model
      "checkpoint.saved", "step.finished",
      "checkpoint.saved", "step.finished", "eval.finished", // step 2
      "checkpoint.saved", "step.finished", "eval.finished", // last step
      "run.finished",
    ]);
    expect(engine.trains.map((t) => t.step)).toEqual([1, 2, 3]);
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    const trainModels = [1, 2, 3].map((s) => new Set(rollouts.filter((t) => t.split === "train" && t.step === s).map((t) => t.model)));
    expect(trainModels.map((s) => [...s])).toEqual([["SmolLM2-135M-Instruct"], ["r@1"], ["r@2"]]);
    const evals = events.flatMap((e) => (e.type === "eval.finished" ? [e.payload] : []));
    expect(evals.map((e) => [e.step, e.model])).toEqual([[0, "SmolLM2-135M-Instruct"], [2, "r@2"], [3, "r@3"]]);
    // eval samples with eval_temperature (0)
    expect(engine.chats.filter((c) => c.messages[0]?.content === "say v").every((c) => c.temperature === 0)).toBe(true);
    // Every call names its run and rollout as OpenAI's `user` ("<run>/<rollout id>"): the engine shares its
    // batches fairly by run, then by rollout within the run.
    expect(engine.chats.every((c) => c.user?.startsWith("r/r:"))).toBe(true);
    for (const c of engine.chats) expect(c.user).toMatch(/^r\/r:(s\d+|eval\d+):g\d+:r\d+$/);

    // Failed rollouts (NaN reward) are recorded with an error and never reach the trainer.
    const failed = rollouts.filter((t) => t.error);
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.every((t) => t.error?.kind === "reward" && t.reward === null)).toBe(true);
    const trainedIds = new Set(engine.trains.flatMap((t) => t.groups.flatMap((g) => g.samples.map((s) => s.trajectory_id))));
    for (const t of failed) expect(trainedIds.has(t.id)).toBe(false);
    for (const t of engine.trains) for (const g of t.groups) expect(g.samples.length).toBeGreaterThanOrEqual(2);
    // Every sample's sampled tokens are exactly what the fake engine returned.
    const sample = engine.trains[0]!.groups[0]!.samples[0]!;
    expect(sample.sequences[0]!.mask.slice(0, 3)).toEqual([0, 0, 0]);

    const steps = events.flatMap((e) => (e.type === "step.finished" ? [e.payload] : []));
    expect(steps.map((s) => s.rollouts)).toEqual([6, 6, 6]);
    expect(steps.every((s) => s.trainer !== null && (s.tokens_per_s ?? 0) >= 0)).toBe(true);
  });

  it("resumes after the newest checkpoint with no step repeated or skipped and the same task order", async () => {
    const straight = new FakeEngine();
    const full = await run(straight, { config: { num_steps: 4, eval_every: 0 } });
    expect(full.status).toBe("completed");

    const engine = new FakeEngine();
    // Stop as soon as checkpoint 2 is saved: step 3's rollouts never start.
    const first = await run(engine, { config: { num_steps: 4, eval_every: 0 } }, (e, c) => {
      if (e.type === "checkpoint.saved" && e.payload.step === 2) c.abort();
    });
    expect(first.status).toBe("stopped");
    expect(first.events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "stopped" } });
    const second = await run(engine, { resume: true, config: { num_steps: 4, eval_every: 0 } });
    expect(second.status).toBe("completed");
    expect(second.events[0]).toMatchObject({ type: "run.started", payload: { resumed_from_step: 2 } });
    expect(engine.trains.map((t) => t.step)).toEqual([1, 2, 3, 4]);

    const tasksByStep = (evs: RunEvent[]) =>
      evs
        .flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []))
        .map((t) => `${t.step}:${t.group}:${t.task_index}:${t.id}`)
        .sort();
    expect(tasksByStep([...first.events, ...second.events])).toEqual(tasksByStep(full.events));
    // Same samples too (seeds derive from run/step/group/rollout): identical training batches.
    expect(engine.trains).toEqual(straight.trains);
  });

  it("reconciles a checkpoint the engine saved after the runner last logged: no step missing, none repeated", async () => {
    const engine = new FakeEngine();
    const config = { num_steps: 4, eval_every: 0 };
    // The runner dies right after the engine saved checkpoint 2: its log ends before checkpoint.saved 2.
    const first = await run(engine, { config }, (e, c) => {
      if (e.type === "step.finished" && e.payload.step === 1) engine.onTrain = (step) => step === 2 && c.abort();
    });
    const cut = first.events.findIndex((e) => e.type === "checkpoint.saved" && e.payload.step === 2);
    expect(cut).toBeGreaterThan(0);
    const logged = first.events.slice(0, cut);
    expect(await engine.latestStep("r")).toBe(2);
    engine.onTrain = null;

    const second = await run(engine, { resume: true, logged, config });
    expect(second.status).toBe("completed");
    expect(second.events[0]).toMatchObject({ type: "run.started", payload: { resumed_from_step: 2 } });
    // The engine trained each step once (2 is not redone), and the record has every step exactly once.
    expect(engine.trains.map((t) => t.step)).toEqual([1, 2, 3, 4]);
    const all = [...logged, ...second.events];
    const stepsOf = (type: "step.finished" | "checkpoint.saved") => all.flatMap((e) => (e.type === type ? [e.payload.step] : []));
    expect(stepsOf("step.finished")).toEqual([1, 2, 3, 4]);
    expect(stepsOf("checkpoint.saved")).toEqual([1, 2, 3, 4]);
    // Step 2's record is rebuilt from its logged rollouts: same count and reward as those, no trainer numbers.
    const step2 = second.events.find((e) => e.type === "step.finished" && e.payload.step === 2);
    const logged2 = logged.flatMap((e) => (e.type === "rollout.finished" && e.payload.step === 2 ? [e.payload] : []));
    expect(logged2).toHaveLength(6);
    const scored = logged2.filter((t) => t.error === null).map((t) => t.reward as number);
    expect(step2).toMatchObject({ payload: { rollouts: 6, trainer: null, reward_mean: scored.reduce((a, b) => a + b, 0) / scored.length } });
    expect(second.events.some((e) => e.type === "run.log" && e.payload.level === "warn" && /checkpoint 2 .*runner stopped before logging it/.test(e.payload.message))).toBe(true);
    // A clean log needs nothing reconciled.
    const clean = new FakeEngine();
    const a = await run(clean, { config }, (e, c) => e.type === "checkpoint.saved" && e.payload.step === 2 && c.abort());
    const b = await run(clean, { resume: true, logged: a.events, config });
    expect(b.events.some((e) => e.type === "run.log" && /runner stopped before logging/.test(e.payload.message))).toBe(false);
    expect([...a.events, ...b.events].flatMap((e) => (e.type === "step.finished" ? [e.payload.step] : []))).toEqual([1, 2, 3, 4]);
  });

  it("fails the run with the engine's message when training fails, and stops cleanly mid-rollouts", async () => {
    const engine = new FakeEngine();
    engine.failTrainAt = 2;
    const failed = await run(engine, { config: { eval_every: 0 } });
    expect(failed.status).toBe("failed");
    expect(failed.events.at(-1)).toMatchObject({
      type: "run.finished",
      payload: { status: "failed", error: expect.stringContaining("CUDA out of memory") },
    });

    const stopping = new FakeEngine();
    let seen = 0;
    const stopped = await run(stopping, { config: { eval_every: 0, max_concurrency: 1 } }, (e, c) => {
      if (e.type === "rollout.finished" && ++seen === 2) c.abort();
    });
    expect(stopped.status).toBe("stopped");
    expect(stopped.events.filter((e) => e.type === "rollout.finished")).toHaveLength(2);
    expect(stopping.trains).toHaveLength(0);
    expect(stopped.events.filter((e) => e.type === "run.finished")).toHaveLength(1);
  });
});

describe("executeRun (engine outage)", () => {
  it("fails the step (no empty training step) when no rollout could reach the model", async () => {
    const engine = new FakeEngine();
    engine.chat = async () => {
      throw new Error("connect ECONNREFUSED 127.0.0.1:8100");
    };
    const { status, events } = await run(engine, { config: { eval_every: 0 } });
    expect(status).toBe("failed");
    expect(engine.trains).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({
      type: "run.finished",
      payload: { status: "failed", error: expect.stringContaining("failed to reach the model") },
    });
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts.every((t) => t.error?.kind === "model")).toBe(true);
  });
});

describe("executeRun (every rollout failed)", () => {
  it("ends a dry run whose every rollout failed as failed, naming the most frequent error", async () => {
    const engine = new FakeEngine();
    const chat = engine.chat.bind(engine);
    engine.chat = async (body) => {
      const r = await chat(body);
      r.choices[0]!.message.content = "broken"; // the reward returns NaN for it
      return r;
    };
    const { status, events } = await run(engine, { kind: "dry-run" });
    expect(status).toBe("failed");
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts.length).toBeGreaterThan(0);
    expect(events.at(-1)).toMatchObject({
      type: "run.finished",
      payload: { status: "failed", error: expect.stringMatching(new RegExp(`^every rollout failed \\(${rollouts.length} of ${rollouts.length}\\); most often \\(${rollouts.length}×\\) reward: `)) },
    });
  });

  it("ends an eval of a model the engine cannot serve as failed, and a run with some failures as completed", async () => {
    const engine = new FakeEngine();
    engine.chat = async () => {
      throw new Error("404: model 'no-such-model' not found");
    };
    const evalRun = await run(engine, { kind: "eval", evalModel: "no-such-model" });
    expect(evalRun.status).toBe("failed");
    expect(evalRun.events.at(-1)).toMatchObject({ payload: { status: "failed", error: expect.stringContaining("every validation rollout failed") } });

    // The FakeEngine's default samples fail one time in seven (NaN reward): the run still completes.
    const mixed = await run(new FakeEngine(), {});
    expect(mixed.events.some((e) => e.type === "rollout.finished" && e.payload.error)).toBe(true);
    expect(mixed.status).toBe("completed");
  });
});

describe("executeRun (existing checkpoints)", () => {
  it("refuses to train a new run over checkpoints the engine already has for that id", async () => {
    const engine = new FakeEngine();
    engine.latest.set("r", 3);
    const { status, events } = await run(engine, { config: { eval_every: 0 } });
    expect(status).toBe("failed");
    expect(engine.trains).toHaveLength(0);
    expect(events.at(-1)).toMatchObject({ payload: { error: expect.stringContaining("already has checkpoints") } });
  });
});

describe("executeRun (groupReward)", () => {
  const GROUP_REWARD = `${REWARD}
import type { GroupRewardInput } from "rollbook";
import { judgeChat } from "rollbook";
/** Ranks the group: the first rollout that said the word gets 1, the rest 0.25 (and the judge is asked once). */
export async function groupReward({ rollouts }: GroupRewardInput<{ word: string }, string>) {
  await judgeChat([{ role: "user", content: "rank these" }]);
  const first = rollouts.findIndex((r) => r.reward === 1);
  return { rewards: rollouts.map((_, i) => (i === first ? 1 : 0.25)), metrics: rollouts.map(() => ({ ranked: 1 })) };
}
`;

  it("scores each group together: the group's rewards train, the independent ones stay as a metric, judge usage is shared", async () => {
    const r = await compileExperiment({ "scenario.ts": SCENARIO, "reward.ts": GROUP_REWARD });
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = new FakeEngine();
    const { status, events } = await run(engine, {
      compiled: r.compiled,
      exports: { scenario: true, reward: true, groupReward: true, taskSchema: "none" },
      config: { num_steps: 1, eval_every: 1 },
    });
    expect(status).toBe("completed");
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    const train = rollouts.filter((t) => t.split === "train" && t.error === null);
    expect(train.length).toBeGreaterThan(0);
    for (const t of train) {
      expect([1, 0.25]).toContain(t.reward);
      expect(t.metrics.independent_reward).toBeTypeOf("number");
      expect(t.metrics.ranked).toBe(1);
      expect(t.metrics.judge_tokens).toBeGreaterThan(0);
    }
    // Validation rollouts keep their own reward: one rollout has nothing to be ranked against.
    expect(rollouts.filter((t) => t.split === "val").every((t) => t.metrics.independent_reward === undefined)).toBe(true);
    // The trainer got the group's rewards.
    const trained = engine.trains[0]!.groups.flatMap((g) => g.samples.map((s) => [s.trajectory_id, s.reward]));
    for (const [id, reward] of trained) expect(train.find((t) => t.id === id)?.reward).toBe(reward);
    // The judge (the local engine, base model) was asked once per group: 2 groups.
    const judged = engine.chats.filter((c) => c.messages[0]?.content === "rank these");
    expect(judged).toHaveLength(2);
    // …as the run's own calls ("<run>/judge": one more rollout of the run), for the engine's fair share.
    expect(judged.map((c) => c.user)).toEqual(["r/judge", "r/judge"]);
  });
});

describe("executeRun (evaluation decoding)", () => {
  it("evaluates with the config's decoding: a scenario's per-call temperature, top_p and seed are ignored, and the rollout says so", async () => {
    const r = await compileExperiment({
      "scenario.ts": SCENARIO.replace(`ctx.chat([{ role: "user", content: "say " + ctx.task.word }])`, `ctx.chat([{ role: "user", content: "say " + ctx.task.word }], { temperature: 1.3, top_p: 0.5, seed: 7 })`),
      "reward.ts": REWARD,
    });
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    const engine = new FakeEngine();
    const { events } = await run(engine, { compiled: r.compiled, config: { num_steps: 1, eval_every: 1, eval_temperature: 0 } });
    const evalCalls = engine.chats.filter((c) => c.messages[0]?.content === "say v");
    const trainCalls = engine.chats.filter((c) => c.messages[0]?.content !== "say v");
    expect(evalCalls.length).toBe(2);
    expect(evalCalls.every((c) => c.temperature === 0 && c.top_p === 1 && c.seed !== 7)).toBe(true);
    // Training rollouts do get the scenario's options.
    expect(trainCalls.every((c) => c.temperature === 1.3 && c.top_p === 0.5 && c.seed === 7)).toBe(true);
    const evalRollouts = events.flatMap((e) => (e.type === "rollout.finished" && e.payload.split === "val" ? [e.payload] : []));
    expect(evalRollouts[0]!.logs[0]).toMatch(/^evaluation: ctx.chat's temperature\/top_p\/seed ignored; evaluation decodes with config.eval_temperature = 0/);
  });
});
