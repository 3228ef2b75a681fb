/**
 * executeRollout's bookkeeping when the rollout is cut while it waits for the model: the real compile and
 * sandbox (say-the-word's files), and a stand-in engine that never answers — the point is what the runner
 * records, not what a model samples.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RunConfig, type ChatCompletionRequest, type ChatCompletionResponse, type ExperimentFiles } from "../../../contracts";
import { EngineError, type EngineClient } from "../engine/client";
import { compileExperiment } from "../experiment/compile";
import type { EngineWatch } from "../engine/restart-recovery";
import { NO_MCP } from "./run-mcp";
import { executeRollout } from "./execute";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const read = (f: string) => readFileSync(new URL(f, TEMPLATE), "utf8");
// Long enough that the sandbox reaches its first model call on a busy machine, short enough for a unit test.
const TIMEOUT_MS = 2_000;
const FILES: ExperimentFiles = {
  "scenario.ts": read("scenario.ts"),
  "reward.ts": read("reward.ts"),
  "tasks.jsonl": read("tasks.jsonl"),
  "config.json": JSON.stringify({ ...JSON.parse(read("config.json")), limits: { rollout_timeout_ms: TIMEOUT_MS } }),
};

/** Two turns: the second extends the first reply's conversation. */
const TWO_TURNS = `import type { RolloutContext } from "rollbook";
export type Task = { word: string };
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const first = await ctx.chat([{ role: "user", content: "Say " + ctx.task.word + "." }]);
  const second = await ctx.chat([{ role: "user", content: "Say " + ctx.task.word + "." }, first.message, { role: "user", content: "Again." }]);
  return second.content;
}
`;

function answer(body: ChatCompletionRequest, content: string): ChatCompletionResponse {
  const ids = Array.from(content, (c) => c.charCodeAt(0));
  return {
    id: "x",
    object: "chat.completion",
    created: 0,
    model: body.model,
    prompt_token_ids: [1, 2, 3],
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop", token_ids: ids, logprobs: { content: ids.map(() => ({ token: "t", logprob: -0.5 })) } }],
    usage: { prompt_tokens: 3, completion_tokens: ids.length, total_tokens: 3 + ids.length },
  } as ChatCompletionResponse;
}

/** Answers the first `answered` calls with `content`; every later call waits until it is aborted. */
function engineAnswering(answered: number, content = "apple"): Pick<EngineClient, "chat"> & { calls: number } {
  const engine = {
    calls: 0,
    chat: (body: ChatCompletionRequest, signal?: AbortSignal) => {
      engine.calls++;
      if (engine.calls <= answered) return Promise.resolve(answer(body, content));
      return new Promise<ChatCompletionResponse>((_resolve, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
      });
    },
  };
  return engine;
}

async function run(files: ExperimentFiles, engine: Pick<EngineClient, "chat">, engineWatch?: EngineWatch) {
  const compiled = await compileExperiment(files);
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
  return executeRollout({
    services: { engine, engineWatch, judge: { description: "none", chat: () => Promise.reject(new Error("no judge")) }, mcp: NO_MCP },
    compiled: compiled.compiled,
    runId: "r",
    config: RunConfig.parse(JSON.parse(files["config.json"])),
    task: { index: 0, line: 1, split: "train", data: { word: "apple" } },
    split: "train",
    step: 0,
    group: 0,
    rolloutIndex: 0,
    model: "m",
  });
}

describe("executeRollout cut by its timeout while waiting for the model", () => {
  it("records the prompt of a first model call that never answered, as a timeout", async () => {
    const engine = engineAnswering(0);
    const done = await run(FILES, engine);
    const t = done.trajectory;
    expect(engine.calls).toBe(1);
    expect(t.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("wall-clock timeout") });
    expect(t.messages).toEqual([
      { role: "system", content: "Answer with one word." },
      { role: "user", content: "Say the word apple." },
    ]);
    // No reply, so no turn figures, no tokens and nothing to train on.
    expect(t.turns).toEqual([]);
    expect(t.tokens).toEqual({ prompt: 0, completion: 0 });
    expect(t.reward).toBeNull();
    expect(done.sample).toBeNull();
    expect(t.logs).toContainEqual(expect.stringContaining("turn 1: the rollout ended while this model call waited for its reply (timeout)"));
  });

  it("adds only the new messages of a later call that never answered, after the turns that did", async () => {
    const engine = engineAnswering(1, "Apple.");
    const t = (await run({ ...FILES, "scenario.ts": TWO_TURNS }, engine)).trajectory;
    expect(engine.calls).toBe(2);
    expect(t.error).toMatchObject({ kind: "timeout" });
    expect(t.messages).toEqual([
      { role: "user", content: "Say apple." },
      { role: "assistant", content: "Apple." },
      { role: "user", content: "Again." },
    ]);
    // The answered turn keeps its figures, pointing at its reply.
    expect(t.turns).toEqual([expect.objectContaining({ message_index: 1, completion_tokens: 6 })]);
    expect(t.logs).toContainEqual(expect.stringContaining("turn 2: the rollout ended"));
  });
});

/** The engine never restarted and answers /health: a failed call was not a restart. */
const STEADY_ENGINE: EngineWatch = {
  restarts: () => 0,
  lastRestart: () => null,
  restarting: () => false,
  probe: () => Promise.resolve(),
  waitReady: () => Promise.resolve(),
};

/** Fails the first `failures` calls with `failure`, then answers; keeps every request it was sent. */
function engineFailing(failures: number, failure: () => Error): Pick<EngineClient, "chat"> & { requests: ChatCompletionRequest[] } {
  const engine = {
    requests: [] as ChatCompletionRequest[],
    chat: (body: ChatCompletionRequest) => {
      engine.requests.push(body);
      return engine.requests.length <= failures ? Promise.reject(failure()) : Promise.resolve(answer(body, "apple"));
    },
  };
  return engine;
}

const RESET = () => new EngineError("engine unreachable at http://127.0.0.1:1/v1/chat/completions: fetch failed (read ECONNRESET)");
// Room for the sandbox's start on a loaded machine: these rollouts are meant to finish.
const ROOMY: ExperimentFiles = { ...FILES, "config.json": JSON.stringify({ ...JSON.parse(FILES["config.json"]), limits: { rollout_timeout_ms: 60_000 } }) };

describe("executeRollout when the connection to the engine is cut and the engine did not restart", () => {
  it("sends the same request once more, and the rollout succeeds with one turn", async () => {
    const engine = engineFailing(1, RESET);
    const done = await run(ROOMY, engine, STEADY_ENGINE);
    expect(done.trajectory.error).toBeNull();
    expect(engine.requests).toHaveLength(2);
    expect(engine.requests[1]).toEqual(engine.requests[0]); // same seed, same everything
    expect(done.turns).toHaveLength(1);
    expect(done.trajectory.tokens).toEqual({ prompt: 3, completion: 5 });
    expect(done.trajectory.logs).toContainEqual(expect.stringMatching(/^turn 1: the connection to the engine was cut \(.*ECONNRESET.*\) with no engine restart; the model call was sent again$/));
  });

  it("retries a cut call without a supervisor to ask too (the engine's own client only)", async () => {
    const engine = engineFailing(1, () => new TypeError("terminated"));
    expect((await run(ROOMY, engine)).trajectory.error).toBeNull();
    expect(engine.requests).toHaveLength(2);
  });

  it("files a call cut twice as the runner's failure (engine_connection), sent no third time", async () => {
    const engine = engineFailing(Infinity, RESET);
    const t = (await run(ROOMY, engine, STEADY_ENGINE)).trajectory;
    expect(engine.requests).toHaveLength(2);
    expect(t.error).toMatchObject({ kind: "engine_connection", message: expect.stringMatching(/^the runner lost its connection to the engine twice on this model call/) });
    expect(t.reward).toBeNull();
  });

  it("does not retry the engine's own answer (a 4xx or 5xx): that is the model call's error", async () => {
    for (const status of [400, 500]) {
      const engine = engineFailing(Infinity, () => new EngineError(`engine /v1/chat/completions → ${status}: no`, status));
      const t = (await run(ROOMY, engine, STEADY_ENGINE)).trajectory;
      expect(engine.requests).toHaveLength(1);
      expect(t.error).toMatchObject({ kind: "model" });
    }
  });
});
