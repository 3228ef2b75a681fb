/**
 * The SDK runtime inside the real sandbox: tools and the agent loop, the bridge's phases and bounds,
 * judges counted host-side, task schemas, and stacks mapped across the experiment's files. The model is
 * the test's own RolloutHost (the runner's side of the bridge), scripted turn by turn.
 */
import { describe, expect, it } from "vitest";
import { LimitsConfig, type ChatMessage, type ToolCall } from "../../../contracts";
import type { ChatResult } from "../../../contracts/sdk/rollbook";
import { compileExperiment, type CompiledExperiment } from "../experiment/compile";
import { type RolloutHost, type RolloutInput, runRollout } from "./run-rollout";
import { runGroupReward } from "./run-group";

// Generous CPU: these tests are about the SDK, not the limits, and a loaded 2-core CI machine is slow.
const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 20_000, cpu_timeout_ms: 5_000, memory_mb: 64 });
const REWARD = `export default function reward({ output }: { output: unknown }) { return typeof output === "number" ? output : 0; }\n`;

async function compile(files: Record<string, string>): Promise<CompiledExperiment> {
  const r = await compileExperiment({ "reward.ts": REWARD, ...files });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics, null, 2));
  return r.compiled;
}

const say = (content: string, toolCalls: ToolCall[] = [], malformed: ChatResult["malformedToolCalls"] = []): ChatResult => {
  const message: ChatMessage = { role: "assistant", content };
  if (toolCalls.length) message.tool_calls = toolCalls;
  return { content, finishReason: toolCalls.length ? "tool_calls" : "stop", toolCalls, malformedToolCalls: malformed, message, usage: { promptTokens: 5, completionTokens: 5 } };
};
const call = (id: string, name: string, args: unknown): ToolCall => ({ id, type: "function", function: { name, arguments: typeof args === "string" ? args : JSON.stringify(args) } });

/** A model that answers the scripted turns in order, and records what it was sent. */
function scripted(turns: ChatResult[], over: Partial<RolloutHost> = {}) {
  const requests: { messages: ChatMessage[]; options: unknown }[] = [];
  const host: RolloutHost = {
    chat: async (messages, options) => {
      requests.push({ messages, options });
      const next = turns[requests.length - 1];
      if (!next) throw new Error("the script has no more turns");
      return next;
    },
    judge: async () => ({ content: "SCORE: 0.5", usage: { promptTokens: 100, completionTokens: 20, costUsd: 0.01 } }),
    mcpList: async () => [],
    mcpCall: async () => ({ text: "", isError: false }),
    ...over,
  };
  return { host, requests };
}

function input(compiled: CompiledExperiment, host: RolloutHost, over: Partial<RolloutInput> = {}): RolloutInput {
  return { compiled, task: {}, split: "train", step: 1, group: 0, rolloutIndex: 0, limits: LIMITS, host, mcpServers: [], getMessages: () => [], ...over };
}

const AGENT = `import { runAgent, tool, type RolloutContext } from "rollbook";
import { z } from "zod";
import { add } from "./lib/calc";
export default async function rollout(ctx: RolloutContext) {
  const r = await runAgent(ctx, { messages: [{ role: "user", content: "2+3?" }], tools: [add], maxTurns: 4 });
  return { answer: r.answer, turns: r.turns, toolCalls: r.toolCalls, toolErrors: r.toolErrors, malformed: r.malformedToolCalls, stop: r.stopReason, roles: r.messages.map((m) => m.role), tool: r.messages.filter((m) => m.role === "tool").map((m) => m.content) };
}
`;
const CALC = `import { tool } from "rollbook";
import { z } from "zod";
export const add = tool({ name: "add", description: "Add two numbers", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
`;

describe("the SDK runtime in the sandbox", () => {
  it("runs the agent loop: tool calls executed with zod-checked arguments, results sent back, then the answer", async () => {
    const compiled = await compile({ "scenario.ts": AGENT, "lib/calc.ts": CALC });
    const { host, requests } = scripted([say("", [call("c1", "add", { a: 2, b: 3 })]), say("The answer is 5.")]);
    const o = await runRollout(input(compiled, host));
    expect(o.error).toBeNull();
    expect(o.output).toEqual({ answer: "The answer is 5.", turns: 2, toolCalls: 1, toolErrors: 0, malformed: 0, stop: "answer", roles: ["user", "assistant", "tool", "assistant"], tool: ["5"] });
    // The model was offered the tool as an OpenAI function spec with the zod schema as JSON Schema.
    const options = requests[0]!.options as { tools: { function: { name: string; parameters: { properties: object; required: string[] } } }[] };
    expect(options.tools[0]!.function).toMatchObject({ name: "add", parameters: { properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] } });
    expect(requests[1]!.messages.at(-1)).toEqual({ role: "tool", tool_call_id: "c1", name: "add", content: "5" });
    expect(o.metrics.tool_errors).toBe(0);
  });

  it("answers bad arguments, unknown tools and unparseable calls with the error, and goes on", async () => {
    const compiled = await compile({ "scenario.ts": AGENT, "lib/calc.ts": CALC });
    const { host, requests } = scripted([
      say("", [call("c1", "add", { a: "two", b: 3 })]),
      say("", [call("c2", "mul", { a: 2, b: 3 })]),
      say('<tool_call>{"name": "add", "arguments": {a: 2}}</tool_call>', [], [{ text: '<tool_call>{"name": "add", "arguments": {a: 2}}</tool_call>', error: "bad JSON" }]),
      say("5"),
    ]);
    const o = await runRollout(input(compiled, host));
    expect(o.error).toBeNull();
    expect(o.output).toMatchObject({ answer: "5", turns: 4, toolCalls: 0, toolErrors: 1, malformed: 2, stop: "answer" });
    const tools = (o.output as { tool: string[] }).tool;
    expect(tools[0]).toMatch(/^Error: invalid arguments: a: /);
    expect(tools[1]).toBe('Error: there is no tool named "mul". Tools: add.');
    expect(requests[3]!.messages.at(-1)).toMatchObject({ role: "user", content: expect.stringContaining("could not be read (bad JSON)") });
  });

  it("a hand-written loop works too, with JSON-Schema parameters checked the same way", async () => {
    const compiled = await compile({
      "scenario.ts": `import { tool, type RolloutContext } from "rollbook";
const echo = tool({ name: "echo", description: "Echo", parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] }, execute: (args) => String(args.text) });
export default async function rollout(ctx: RolloutContext) {
  const r = await ctx.chat([{ role: "user", content: "hi" }], { tools: [echo], tool_choice: "required" });
  const c = r.toolCalls[0]!;
  const parsed = echo.parseArguments(c.function.arguments);
  const bad = echo.parseArguments('{"text": 1}');
  return [parsed.ok ? await echo.execute(parsed.args, { ctx, toolCallId: c.id }) : parsed.error, bad.ok ? "accepted" : bad.error];
}
`,
    });
    const { host, requests } = scripted([say("", [call("c1", "echo", { text: "yo" })])]);
    const o = await runRollout(input(compiled, host));
    expect(o.error).toBeNull();
    expect(o.output).toEqual(["yo", expect.stringMatching(/^invalid arguments: text: /)]);
    expect(requests[0]!.options).toMatchObject({ tool_choice: "required", tools: [{ type: "function", function: { name: "echo" } }] });
  });

  it("refuses the policy from the reward function, but lets it use the judge (counted host-side)", async () => {
    const compiled = await compile({
      "scenario.ts": `export default async function rollout() { return 1; }\n`,
      "reward.ts": `import { judgeChat, type RewardInput } from "rollbook";
export default async function reward({ output }: RewardInput<unknown, number>) {
  const j = await judgeChat([{ role: "user", content: "score it" }]);
  const host = (globalThis as Record<string, any>).__rollbook_host;
  const policy = await host.chat([{ role: "user", content: "sneak" }], {});
  return { reward: output, metrics: { judged: j.content === "SCORE: 0.5" ? 1 : 0, policyRefused: policy.ok ? 0 : 1, judge_tokens: 0 } };
}
`,
    });
    const { host, requests } = scripted([]);
    const o = await runRollout(input(compiled, host));
    expect(o.error).toBeNull();
    expect(o.metrics).toMatchObject({ judged: 1, policyRefused: 1 });
    expect(requests).toHaveLength(0);
    expect(o.record.judge).toEqual({ calls: 1, prompt_tokens: 100, completion_tokens: 20, cost_usd: 0.01 });
  });

  it("bounds model calls in flight, refuses a flood, and cancels what is pending when the scenario returns", async () => {
    let inFlight = 0;
    let peak = 0;
    const aborted: number[] = [];
    const compiled = await compile({
      "scenario.ts": `import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext) {
  const calls = Array.from({ length: 500 }, (_, i) => ctx.chat([{ role: "user", content: String(i) }]).then(() => "ok", (e: Error) => e.name));
  const names = await Promise.all(calls.slice(68));
  return names.filter((n) => n === "LimitError").length;
}
`,
    });
    const host: RolloutHost = {
      ...scripted([]).host,
      chat: (_m, _o, signal) =>
        new Promise((_resolve, reject) => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          signal.addEventListener("abort", () => {
            inFlight--;
            aborted.push(1);
            reject(signal.reason as Error);
          });
        }),
    };
    const o = await runRollout(input(compiled, host, { limits: { ...LIMITS, max_inflight_calls: 3 } }));
    expect(peak).toBe(3);
    expect(o.error).toBeNull();
    // 500 calls: 3 in flight + 64 queued; the other 433 are refused at once with a LimitError.
    expect(o.output).toBe(432);
    // When the scenario returned, the 3 calls in flight were aborted (their fetches cancelled).
    expect(aborted).toHaveLength(3);
    expect(inFlight).toBe(0);
  });

  it("refuses a multi-megabyte prompt before it reaches the model", async () => {
    const compiled = await compile({
      "scenario.ts": `import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext) {
  try { await ctx.chat([{ role: "user", content: "x".repeat(5_000_000) }]); return "sent"; } catch (e) { return (e as Error).message; }
}
`,
    });
    const { host, requests } = scripted([say("no")]);
    const o = await runRollout(input(compiled, host, { limits: { ...LIMITS, memory_mb: 128 } }));
    // Counted as the whole request's JSON (names, ids and tools too), and refused inside the isolate.
    expect(o.output).toMatch(/^ctx\.chat: the messages and options are 5,000,0\d\d characters as JSON; limits\.max_prompt_chars is 400,000$/);
    expect(requests).toHaveLength(0);
  });

  it("parses the task with the scenario's taskSchema (defaults applied), and maps a stack through lib/ files", async () => {
    const compiled = await compile({
      "scenario.ts": `import type { RolloutContext } from "rollbook";
import { z } from "zod";
import { check } from "./lib/check";
export const taskSchema = z.object({ n: z.number(), label: z.string().default("none") });
export default async function rollout(ctx: RolloutContext<z.infer<typeof taskSchema>>) {
  check(ctx.task.n);
  return ctx.task.label;
}
`,
      "lib/check.ts": `export function check(n: number): void {
  if (n < 0) {
    throw new RangeError("negative " + n);
  }
}
`,
    });
    const ok = await runRollout(input(compiled, scripted([]).host, { task: { n: 1 } }));
    expect(ok.output).toBe("none");
    const bad = await runRollout(input(compiled, scripted([]).host, { task: { n: -1 } }));
    expect(bad.error).toMatchObject({ kind: "thrown", message: "RangeError: negative -1" });
    expect(bad.error?.stack).toMatch(/at check \(lib\/check\.ts:3:11\)\n\s+at rollout \(scenario\.ts:6:3\)/);
  });

  it("llmJudge asks the judge with the rubric, reads SCORE, retries once, and fails the reward when it cannot", async () => {
    const compiled = await compile({
      "scenario.ts": `export default async function rollout() { return "Paris is the capital of France."; }\n`,
      "reward.ts": `import { llmJudge, type RewardInput } from "rollbook";
export default async function reward({ task, output }: RewardInput<{ q: string }, string>) {
  const j = await llmJudge({ task, output }, { rubric: "Names the capital correctly.", reference: "Paris" });
  return { reward: j.score, metrics: { judgeTokens: j.usage.promptTokens + j.usage.completionTokens, explained: j.explanation.length > 0 ? 1 : 0 } };
}
`,
    });
    const prompts: ChatMessage[][] = [];
    const replies = ["It names Paris.\nSCORE: 0.9"];
    const judge: RolloutHost["judge"] = async (messages) => {
      prompts.push(messages);
      return { content: replies.shift() ?? "no idea", usage: { promptTokens: 50, completionTokens: 5, costUsd: 0 } };
    };
    const ok = await runRollout(input(compiled, scripted([], { judge }).host, { task: { q: "capital of France?" } }));
    expect(ok.error).toBeNull();
    expect(ok.reward).toBe(0.9);
    expect(ok.metrics).toMatchObject({ judgeTokens: 55, explained: 1 });
    expect(JSON.stringify(prompts[0])).toContain("Names the capital correctly.");
    expect(JSON.stringify(prompts[0])).toContain("Paris is the capital of France.");

    const bad = await runRollout(input(compiled, scripted([], { judge }).host, { task: { q: "?" } }));
    expect(bad.error).toMatchObject({ kind: "reward", message: expect.stringContaining('the judge gave no score (it must end with "SCORE: <0..1>")') });
    expect(bad.record.judge.calls).toBe(2);
  });

  it("rulerJudge scores a group together: the shared prefix once, one score per rollout", async () => {
    const compiled = await compile({
      "scenario.ts": `export default async function rollout() { return 1; }\n`,
      "reward.ts": `import { rulerJudge } from "rollbook";\nexport default function reward() { return 0; }\nexport const groupReward = rulerJudge({ rubric: "Shorter is better." });\n`,
    });
    const sent: ChatMessage[][] = [];
    const judge: RolloutHost["judge"] = async (messages) => {
      sent.push(messages);
      return { content: '```json\n{"scores": [{"trajectory_id": "1", "explanation": "long", "score": 0.2}, {"trajectory_id": "2", "explanation": "short", "score": 0.9}]}\n```', usage: { promptTokens: 300, completionTokens: 40, costUsd: 0.002 } };
    };
    const shared: ChatMessage = { role: "user", content: "THE SHARED QUESTION" };
    const out = await runGroupReward({
      compiled,
      task: {},
      rollouts: [
        { output: 1, messages: [shared, { role: "assistant", content: "a long answer" }], reward: 0, metrics: {} },
        { output: 1, messages: [shared, { role: "assistant", content: "short" }], reward: 0, metrics: {} },
      ],
      limits: LIMITS,
      host: scripted([], { judge }).host,
    });
    expect(out.error).toBeNull();
    expect(out.rewards).toEqual([0.2, 0.9]);
    expect(out.metrics).toEqual([{ ruler_score: 0.2 }, { ruler_score: 0.9 }]);
    expect(out.record.judge).toMatchObject({ calls: 1, prompt_tokens: 300, cost_usd: 0.002 });
    const text = JSON.stringify(sent[0]);
    expect(text.split("THE SHARED QUESTION")).toHaveLength(2); // sent once
    expect(text).toContain("Shorter is better.");
  });
});
