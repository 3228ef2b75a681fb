/**
 * Real isolated-vm, real esbuild/TypeScript: each case compiles a small experiment and runs it. The only
 * stand-in is the `chat` host callback (the caller's job), a plain function here.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LimitsConfig, type ChatMessage } from "../../../contracts";
import type { ChatResult } from "../../../contracts/sdk/rollbook";
import { type CompiledExperiment, compileExperiment } from "../experiment/compile";
import { type RolloutHost, type RolloutInput, runRollout } from "./run-rollout";

const TEMPLATE = new URL("../../../templates/say-the-word/", import.meta.url);
const template = {
  "scenario.ts": readFileSync(new URL("scenario.ts", TEMPLATE), "utf8"),
  "reward.ts": readFileSync(new URL("reward.ts", TEMPLATE), "utf8"),
};
const HEADER = `import type { RolloutContext } from "rollbook";\n`;
const PLAIN_REWARD = `export default function reward({ output }: { output: unknown }) { return output === "ok" ? 1 : 0; }\n`;
const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 3_000, cpu_timeout_ms: 200, memory_mb: 32 });

async function compile(scenario: string, reward = PLAIN_REWARD, extra: Record<string, string> = {}): Promise<CompiledExperiment> {
  const r = await compileExperiment({ "scenario.ts": scenario, "reward.ts": reward, ...extra });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
  return r.compiled;
}

/** A host whose model records the conversation as the runner does, and answers `reply`. */
function fakeHost(reply: string | ((messages: ChatMessage[]) => ChatResult) = "Apple.", over: Partial<RolloutHost> = {}) {
  const messages: ChatMessage[] = [];
  const calls: unknown[] = [];
  const chat: RolloutHost["chat"] = async (msgs, options) => {
    calls.push(options);
    messages.push(...msgs.slice(messages.length));
    const result: ChatResult =
      typeof reply === "function"
        ? reply(msgs)
        : { content: reply, finishReason: "stop", toolCalls: [], malformedToolCalls: [], message: { role: "assistant", content: reply }, usage: { promptTokens: 1, completionTokens: 1 } };
    messages.push(result.message);
    return result;
  };
  const host: RolloutHost = {
    chat,
    judge: async () => ({ content: "SCORE: 1", usage: { promptTokens: 10, completionTokens: 2, costUsd: 0.001 } }),
    mcpList: async () => [],
    mcpCall: async () => ({ text: "", isError: false }),
    ...over,
  };
  return { host, messages, calls, getMessages: () => messages };
}

function input(compiled: CompiledExperiment, over: Partial<RolloutInput> = {}): RolloutInput {
  const model = fakeHost("ok");
  return {
    compiled,
    task: { word: "apple" },
    split: "train",
    step: 3,
    group: 0,
    rolloutIndex: 1,
    limits: LIMITS,
    host: model.host,
    mcpServers: [],
    getMessages: model.getMessages,
    ...over,
  };
}

describe("runRollout", () => {
  it("runs the template: output, reward, metrics and logs", async () => {
    const compiled = await compile(template["scenario.ts"], template["reward.ts"]);
    const model = fakeHost("Apple.");
    const o = await runRollout(input(compiled, { host: model.host, getMessages: model.getMessages }));
    expect(o.error).toBeNull();
    expect(o.output).toBe("Apple.");
    expect(o.reward).toBe(1);
    expect(model.messages.map((m) => m.role)).toEqual(["system", "user", "assistant"]);
  });

  it("gives ctx its fields, and the reward the recorded messages and the untouched task", async () => {
    const compiled = await compile(
      HEADER +
        `export default async function rollout(ctx: RolloutContext<{ word: string }>) {
  const g = globalThis as Record<string, unknown>;
  const r = await ctx.chat([{ role: "user", content: ctx.task.word }], { temperature: 0.5 });
  ctx.metric("turns", 1);
  console.log("via console", 2);
  (ctx.task as { word: string }).word = "mutated";
  return { split: ctx.split, step: ctx.step, i: ctx.rolloutIndex, reply: r.content, role: r.message.role, hasRequire: typeof g.require, hasProcess: typeof g.process };
}
`,
      `import type { RewardInput, ChatMessage } from "rollbook";
export default async function reward({ task, messages }: RewardInput<{ word: string }>) {
  return { reward: messages.length, metrics: { wordIsApple: task.word === "apple" ? 1 : 0, last: (messages as ChatMessage[]).length } };
}
`,
    );
    const model = fakeHost("ok");
    const o = await runRollout(input(compiled, { host: model.host, getMessages: model.getMessages }));
    expect(o.error).toBeNull();
    expect(o.output).toEqual({ split: "train", step: 3, i: 1, reply: "ok", role: "assistant", hasRequire: "undefined", hasProcess: "undefined" });
    expect(o.reward).toBe(2);
    expect(o.metrics).toEqual({ turns: 1, wordIsApple: 1, last: 2 });
    expect(o.logs).toEqual(["via console 2"]);
    expect(model.calls).toEqual([{ temperature: 0.5 }]);
  });

  it("stops `while (true) {}` as a CPU timeout, and the host lives on", async () => {
    const compiled = await compile(`export default async function rollout() { while (true) {} }\n`);
    const o = await runRollout(input(compiled));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("CPU timeout") });
    expect(o.reward).toBeNull();
    expect(o.durationMs).toBeLessThan(2_000);
    expect(await Promise.resolve(1 + 1)).toBe(2);
  });

  it("stops a busy loop after an await (isolated-vm's own timeout does not cover it)", async () => {
    const compiled = await compile(
      HEADER + `export default async function rollout(ctx: RolloutContext) {\n  await ctx.chat([{ role: "user", content: "hi" }]);\n  for (;;) {}\n}\n`,
    );
    const o = await runRollout(input(compiled));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("CPU timeout") });
    expect(o.durationMs).toBeLessThan(2_000);
  });

  it("stops a never-resolving chat as a wall-clock timeout", async () => {
    const compiled = await compile(
      HEADER + `export default async function rollout(ctx: RolloutContext) {\n  await ctx.chat([{ role: "user", content: "hi" }]);\n  return "ok";\n}\n`,
    );
    const o = await runRollout(input(compiled, { host: fakeHost("ok", { chat: () => new Promise(() => {}) }).host, limits: { ...LIMITS, rollout_timeout_ms: 300 } }));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("wall-clock") });
    expect(o.durationMs).toBeGreaterThanOrEqual(290);
    expect(o.durationMs).toBeLessThan(2_000);
  });

  it("reports unbounded allocation as a memory error", async () => {
    const compiled = await compile(
      HEADER +
        `export default async function rollout(ctx: RolloutContext) {
  await ctx.chat([{ role: "user", content: "hi" }]);
  const hoard: string[][] = [];
  for (let i = 0; ; i++) hoard.push(new Array(1000).fill("x" + i));
}
`,
    );
    const o = await runRollout(input(compiled, { limits: { ...LIMITS, cpu_timeout_ms: 20_000, rollout_timeout_ms: 20_000 } }));
    expect(o.error).toMatchObject({ kind: "memory", message: expect.stringContaining("32 MB") });
  });

  it("reports a throw with its message and a stack in the user's file", async () => {
    const compiled = await compile(`export default async function rollout() {\n  return helper();\n}\nfunction helper(): string {\n  throw new Error("the task was odd");\n}\n`);
    const o = await runRollout(input(compiled));
    expect(o.error?.kind).toBe("thrown");
    expect(o.error?.message).toBe("the task was odd");
    expect(o.error?.stack).toContain("scenario.ts:5:9");
    expect(o.error?.stack).not.toContain("rollbook-sandbox");
  });

  it("reports a throw while the module loads, mapped to the user's line", async () => {
    const compiled = await compile(`const limit = 3;\nif (limit > 2) throw new Error("bad module");\nexport default async function rollout() { return limit; }\n`);
    const o = await runRollout(input(compiled));
    expect(o.error).toMatchObject({ kind: "thrown", message: "bad module" });
    expect(o.error?.stack).toBe("Error: bad module\n    at scenario.ts:2:22");
  });

  it("reports a reward of NaN, and a throwing reward, as reward errors", async () => {
    const scenario = `export default async function rollout() { return "ok"; }\n`;
    const nan = await runRollout(input(await compile(scenario, `export default function reward() { return 0 / 0; }\n`)));
    expect(nan.error).toMatchObject({ kind: "reward", message: expect.stringContaining("returned NaN") });
    expect(nan.reward).toBeNull();
    expect(nan.output).toBe("ok");

    const threw = await runRollout(input(await compile(scenario, `export default function reward(): number { throw new RangeError("bad"); }\n`)));
    expect(threw.error).toMatchObject({ kind: "reward", message: "the reward function threw: RangeError: bad" });

    const str = await runRollout(input(await compile(scenario, `export default function reward() { return { reward: "1" } as unknown as number; }\n`)));
    expect(str.error).toMatchObject({ kind: "reward", message: expect.stringContaining("reward must be a finite number") });
  });

  it("rejects bad chat messages inside the isolate, where user code can catch it", async () => {
    const compiled = await compile(
      HEADER +
        `export default async function rollout(ctx: RolloutContext) {
  try {
    await ctx.chat([{ role: "robot", content: "hi" }] as never);
    return "not rejected";
  } catch (e) {
    return (e as Error).name + ": " + (e as Error).message;
  }
}
`,
    );
    const o = await runRollout(input(compiled));
    expect(o.error).toBeNull();
    expect(o.output).toMatch(/^TypeError: ctx.chat: invalid messages: messages\[0\]\.role/);
  });

  it("classifies an uncaught model failure as a model error", async () => {
    const compiled = await compile(HEADER + `export default async function rollout(ctx: RolloutContext) {\n  await ctx.chat([{ role: "user", content: "hi" }]);\n}\n`);
    const o = await runRollout(input(compiled, { host: fakeHost("ok", { chat: () => Promise.reject(new Error("engine down")) }).host }));
    expect(o.error).toMatchObject({ kind: "model", message: expect.stringContaining("engine down") });
    // A request the caller refuses (TypeError) is the user's error, not the model's.
    const refused = await runRollout(input(compiled, { host: fakeHost("ok", { chat: () => Promise.reject(new TypeError("prompt too long")) }).host }));
    expect(refused.error).toMatchObject({ kind: "thrown", message: "TypeError: prompt too long" });
  });

  it("refuses output that is not JSON data, and rejects bad metrics", async () => {
    const o = await runRollout(input(await compile(`export default async function rollout() { return 10n; }\n`)));
    expect(o.error).toMatchObject({ kind: "thrown", message: expect.stringContaining("not JSON-serialisable") });

    const m = await runRollout(
      input(await compile(HEADER + `export default async function rollout(ctx: RolloutContext) { ctx.metric("x", Infinity); return "ok"; }\n`)),
    );
    expect(m.error).toMatchObject({ kind: "thrown", message: expect.stringContaining("finite number") });
  });

  it("caps logs", async () => {
    const compiled = await compile(
      HEADER + `export default async function rollout(ctx: RolloutContext) { for (let i = 0; i < 1000; i++) ctx.log("x".repeat(5000)); return "ok"; }\n`,
    );
    const o = await runRollout(input(compiled));
    expect(o.error).toBeNull();
    expect(o.logs).toHaveLength(201);
    expect(o.logs[0]!.length).toBeLessThan(2_100);
    expect(o.logs[200]).toContain("log limit");
  });

  it("stops on abort", async () => {
    const compiled = await compile(HEADER + `export default async function rollout(ctx: RolloutContext) {\n  await ctx.chat([{ role: "user", content: "hi" }]);\n}\n`);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const o = await runRollout(input(compiled, { host: fakeHost("ok", { chat: () => new Promise(() => {}) }).host, signal: ac.signal }));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("aborted") });
  });

  it("runs 20 rollouts at once; 2 failing ones do not affect the other 18", async () => {
    const compiled = await compile(
      HEADER +
        `export default async function rollout(ctx: RolloutContext<{ n: number }>) {
  const r = await ctx.chat([{ role: "user", content: String(ctx.task.n) }]);
  if (ctx.task.n === 7) throw new Error("seven");
  if (ctx.task.n === 13) while (true) {}
  return r.content;
}
`,
    );
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, n) => {
        const model = fakeHost("ok");
        return runRollout(input(compiled, { task: { n }, host: model.host, getMessages: model.getMessages }));
      }),
    );
    const ok = outcomes.filter((o) => o.error === null);
    expect(ok).toHaveLength(18);
    expect(ok.every((o) => o.reward === 1 && o.output === "ok")).toBe(true);
    expect(outcomes[7]?.error?.kind).toBe("thrown");
    expect(outcomes[13]?.error?.kind).toBe("timeout");
  });
});
