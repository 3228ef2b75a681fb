/**
 * MCP tool arguments are checked against the tool's input schema before the call, on a real MCP server
 * (fixtures/recorder.mjs, which answers which calls reached it): a wrong argument name or type comes back
 * to the model as a tool error naming the argument and is never sent; in a rollout (the real compile,
 * sandbox, runAgent and run connection, a stand-in engine that writes the calls) it counts as malformed.
 *   npx vitest run --project server gpu-runner/src/mcp/arguments.servertest.ts
 */
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { McpLaunchConfig, RunConfig, type ChatCompletionRequest, type ChatCompletionResponse, type ExperimentFiles } from "../../../contracts";
import type { EngineClient } from "../engine/client";
import { REPO_ROOT } from "../env";
import { compileExperiment } from "../experiment/compile";
import type { McpConnection } from "../loop/run-loop";
import { executeRollout } from "../rollout/execute";
import { McpHub } from "./index";
import { connectRunMcp } from "./run-connection";
import { FIXTURES } from "./test-support";

const LAUNCH = McpLaunchConfig.parse({
  servers: { rec: { transport: "stdio", command: "node", args: [path.join(FIXTURES, "recorder.mjs")] } },
  connect_timeout_ms: 30_000,
});
// Outside the bubblewrap sandbox (sandbox.servertest.ts covers it): the point here is what reaches the server.
const OPTIONS = { allowStdio: true, repoRoot: REPO_ROOT, sandbox: null };

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** What reached the server, by its own account. */
async function received(call: (tool: string, args: Record<string, unknown>) => Promise<{ text: string }>): Promise<unknown[]> {
  return JSON.parse((await call("calls", {})).text) as unknown[];
}

describe("MCP tool arguments against the tool's input schema", () => {
  it("McpHub: a wrong name or type is answered as a tool error naming the argument, and never sent", async () => {
    const hub = new McpHub();
    closers.push(() => hub.close());
    await hub.connect(LAUNCH, OPTIONS);
    expect(hub.status()[0]).toMatchObject({ state: "ready", error: null });
    const call = (tool: string, args: Record<string, unknown>) => hub.call("rec", tool, args);

    expect(await call("add", { a: 2, c: 40 })).toEqual({
      text: "Tool 'add' was not called: its arguments do not match its input schema: unknown argument 'c' (the tool takes: a, b); missing required argument 'b'",
      isError: true,
    });
    expect(await call("add", { a: 2, b: "forty" })).toEqual({
      text: "Tool 'add' was not called: its arguments do not match its input schema: argument 'b' must be number",
      isError: true,
    });
    expect(await received(call)).toEqual([]);

    expect(await call("add", { a: 2, b: 40 })).toEqual({ text: "42", isError: false });
    expect(await received(call)).toEqual([{ tool: "add", args: { a: 2, b: 40 } }]);
  });

  it("a rollout: the model's wrong argument name is answered with the error, not sent, and counted as malformed", async () => {
    let mcp: McpConnection | null = null;
    mcp = await connectRunMcp(LAUNCH, OPTIONS);
    closers.push(() => mcp!.close());
    expect(mcp.problems).toEqual([]);

    // Turn 1 calls add with a misspelt argument, turn 2 with the right ones, turn 3 answers.
    const calls = [
      { name: "add", arguments: JSON.stringify({ a: 2, bb: 40 }) },
      { name: "add", arguments: JSON.stringify({ a: 2, b: 40 }) },
    ];
    const engine = engineWriting(calls);
    const result = await rollout(engine, mcp);

    expect(result.trajectory.error).toBeNull();
    const toolMessages = result.trajectory.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolMessages).toEqual([
      "Error: Tool 'add' was not called: its arguments do not match its input schema: unknown argument 'bb' (the tool takes: a, b); missing required argument 'b'",
      "42",
    ]);
    expect(result.trajectory.metrics).toMatchObject({ turns: 3, tool_calls: 1, malformed_tool_calls: 1 });
    expect(await received((tool, args) => mcp!.mcp.call("rec", tool, args, new AbortController().signal))).toEqual([{ tool: "add", args: { a: 2, b: 40 } }]);
  });
});

const SCENARIO = `import { runAgent, type RolloutContext } from "rollbook";
export type Task = { q: string };
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const tools = (await ctx.mcp.tools("rec")).filter((t) => t.name === "add");
  const result = await runAgent(ctx, { messages: [{ role: "user", content: ctx.task.q }], tools, maxTurns: 4 });
  return result.answer;
}
`;

async function rollout(engine: Pick<EngineClient, "chat">, mcp: McpConnection) {
  const files: ExperimentFiles = {
    "scenario.ts": SCENARIO,
    "reward.ts": "export default function reward() { return { reward: 1 }; }\n",
    "tasks.jsonl": '{"q": "2 + 40?"}\n',
    "config.json": JSON.stringify({ mcp: { servers: { rec: { transport: "stdio", server: "rec" } } } }),
  };
  const compiled = await compileExperiment(files);
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
  return executeRollout({
    services: { engine, judge: { description: "none", chat: () => Promise.reject(new Error("no judge")) }, mcp: mcp.mcp },
    compiled: compiled.compiled,
    runId: "r",
    config: RunConfig.parse(JSON.parse(files["config.json"])),
    task: { index: 0, line: 1, split: "train", data: { q: "2 + 40?" } },
    split: "train",
    step: 0,
    group: 0,
    rolloutIndex: 0,
    model: "m",
  });
}

/** Replies with one tool call per turn from `calls` (as the engine parses them), then with an answer. */
function engineWriting(calls: { name: string; arguments: string }[]): Pick<EngineClient, "chat"> {
  let turn = 0;
  return {
    chat: (body: ChatCompletionRequest) => {
      const call = calls[turn];
      turn++;
      const message = call
        ? { role: "assistant" as const, content: "", tool_calls: [{ id: `call_${turn}`, type: "function" as const, function: call }] }
        : { role: "assistant" as const, content: "42" };
      const ids = [10 + turn, 20 + turn];
      return Promise.resolve({
        id: "x",
        object: "chat.completion",
        created: 0,
        model: body.model,
        prompt_token_ids: [1, 2, 3],
        choices: [{ index: 0, message, finish_reason: call ? "tool_calls" : "stop", token_ids: ids, logprobs: { content: ids.map(() => ({ token: "t", logprob: -0.5 })) } }],
        usage: { prompt_tokens: 3, completion_tokens: ids.length, total_tokens: 3 + ids.length },
      } as ChatCompletionResponse);
    },
  };
}
