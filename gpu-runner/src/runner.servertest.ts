/**
 * The runner end to end: a real runner server on a random port, its real engine child (CPU, SmolLM2-135M),
 * real isolated-vm, reached over HTTP through createRunnerClient exactly as the web server reaches it.
 *   npx vitest run --project server gpu-runner/src/runner.servertest.ts
 * Needs the engine's venv (npm run setup); set ENGINE_URL to use an engine that is already running.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExperimentFiles, type RunEvent } from "../../contracts";
import { createRunnerClient, type RunnerClient } from "./client";
import { loadEnv, REPO_ROOT } from "./env";
import type { RunnerServer } from "./server";
import { startTestRunner, type TestRunner } from "./test-support/test-runner";
import { descendants, startEverythingHttp, type EverythingHttp } from "./mcp/test-support";
import { compileExperiment } from "./experiment/compile";
import { executeRollout } from "./rollout/execute";
import { createJudgeClient } from "./judge/judge-client";
import { NO_MCP } from "./rollout/run-mcp";
import { RunConfig } from "../../contracts";

const TOKEN = "servertest-token-0123456789";
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
const engineAvailable = Boolean(env0.ENGINE_URL) || fs.existsSync(env0.ENGINE_PYTHON);
if (!engineAvailable) console.warn(`runner.servertest: skipped, no engine python at ${env0.ENGINE_PYTHON} (npm run setup)`);


function template(config: Record<string, unknown>, scenario?: string): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const base = JSON.parse(read("config.json")) as Record<string, unknown>;
  return {
    "scenario.ts": scenario ?? read("scenario.ts"),
    "reward.ts": read("reward.ts"),
    "tasks.jsonl": read("tasks.jsonl"),
    "config.json": JSON.stringify({ ...base, ...config }, null, 2),
  };
}

/** Consume the events subscription until the server ends it (after run.finished). */
function collect(client: RunnerClient, input: { run_id: string; after_seq?: number; lastEventId?: string }) {
  return new Promise<{ events: RunEvent[]; ids: string[] }>((resolve, reject) => {
    const events: RunEvent[] = [];
    const ids: string[] = [];
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`events of ${input.run_id} did not end; got ${events.length}`));
    }, 500_000);
    const sub = client.events.subscribe(input, {
      onData: (tracked) => {
        ids.push(tracked.id);
        events.push(tracked.data as RunEvent);
      },
      onComplete: () => {
        clearTimeout(timer);
        resolve({ events, ids });
      },
      onError: (err) => {
        clearTimeout(timer);
        reject(err);
      },
    });
  });
}

describe.skipIf(!engineAvailable)("runner server (real engine, real sandbox)", () => {
  let testRunner: TestRunner | undefined;
  let runner: RunnerServer;
  let client: RunnerClient;
  let runsDir: string;
  const small = { groups_per_step: 2, rollouts_per_group: 2, sampling: { temperature: 1.0, max_tokens: 8 } };

  beforeAll(async () => {
    // Its MCP http server listens on 127.0.0.1, which the egress policy refuses unless the operator allows it.
    testRunner = await startTestRunner({ name: "servertest", token: TOKEN, env: { EGRESS_ALLOW: "127.0.0.1" }, engine: "shared" });
    ({ server: runner, client, runsDir } = testRunner);
  }, 600_000);

  afterAll(() => testRunner?.close(), 60_000);

  it("refuses calls without the right bearer token", async () => {
    const wrong = createRunnerClient(runner.url, "not-the-token");
    await expect(wrong.status.query()).rejects.toMatchObject({ data: { code: "UNAUTHORIZED" } });
    const status = await client.status.query();
    expect(status.runner).toBe("servertest");
    expect(status.engine.state).toBe("ready");
  });

  it("validates and runs a 5 MB experiment: files travel in request bodies, lib/ helpers and taskSchema included", async () => {
    const tasks = Array.from({ length: 90_000 }, (_, i) => JSON.stringify({ word: `word${i}`, note: "x".repeat(40), ...(i % 1000 === 0 ? { split: "val" } : {}) })).join("\n");
    const files: ExperimentFiles = {
      ...template(small),
      "scenario.ts": `import type { RolloutContext } from "rollbook";
import { z } from "zod";
import { prompt } from "./lib/prompt";
export const taskSchema = z.object({ word: z.string(), note: z.string() });
export default async function rollout(ctx: RolloutContext<z.infer<typeof taskSchema>>) {
  const reply = await ctx.chat(prompt(ctx.task.word));
  return reply.content;
}
`,
      "reward.ts": `export default function reward({ output }: { output: string }) { return output.length > 0 ? 1 : 0; }\n`,
      "lib/prompt.ts": `import type { ChatMessage } from "rollbook";\nexport const prompt = (w: string): ChatMessage[] => [{ role: "user", content: "Say " + w }];\n`,
      "tasks.jsonl": tasks,
    };
    expect(Buffer.byteLength(JSON.stringify(files))).toBeGreaterThan(5_000_000);
    expect(await client.validate.mutate({ files, kind: "dry-run" })).toEqual({ ok: true, diagnostics: [] });
    // One bad row among 90,000 is named at its line, and nothing starts.
    const bad = { ...files, "tasks.jsonl": tasks.replace('{"word":"word4567",', '{"word":4567,') };
    const refused = await client.start.mutate({ run_id: "big-bad", workspace_id: "ws-test", kind: "dry-run", files: bad, resume: false });
    expect(refused).toMatchObject({ ok: false, diagnostics: [{ file: "tasks.jsonl", line: 4568, message: expect.stringContaining('field "word"') }] });
    expect((await client.status.query()).runs.some((r) => r.run_id === "big-bad")).toBe(false);

    expect(await client.start.mutate({ run_id: "big-1", workspace_id: "ws-test", kind: "dry-run", files, resume: false })).toEqual({ ok: true, run_id: "big-1" });
    const { events } = await collect(client, { run_id: "big-1", after_seq: 0 });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts).toHaveLength(4);
    expect(rollouts.every((t) => t.error === null && t.metrics.turns === 1)).toBe(true);
  });

  it("reaches MCP servers over stdio and streamable HTTP from a scenario (server-everything), and fails only the rollouts needing a broken one", async () => {
    let http: EverythingHttp | undefined;
    const before = new Set(descendants());
    try {
      http = await startEverythingHttp("streamableHttp");
      const files: ExperimentFiles = {
        ...template({ ...small, rollouts_per_group: 2, mcp: { servers: {
          local: { transport: "stdio", server: "everything", tools: ["echo", "get-sum"] },
          remote: { transport: "http", url: http.url, tools: ["echo", "get-sum"] },
          broken: { transport: "stdio", server: "nothing" },
        } } }),
        "scenario.ts": `import type { RolloutContext } from "rollbook";
export default async function rollout(ctx: RolloutContext<{ word: string }>) {
  const server = ctx.rolloutIndex === 0 ? "local" : "remote";
  const tools = await ctx.mcp.tools(server);
  const sum = await ctx.mcp.call(server, "get-sum", { a: 20, b: 22 });
  const echo = await ctx.mcp.call(server, "echo", { message: ctx.task.word });
  // The tools reach the model's prompt (the engine renders them); the reply itself does not matter here.
  await ctx.chat([{ role: "user", content: "Add 1 and 2." }], { tools, max_tokens: 4 });
  if (ctx.group === 1) await ctx.mcp.call("broken", "echo", { message: "x" });
  return { server, names: tools.map((t) => t.name), sum: sum.text, echo: echo.text, servers: ctx.mcp.servers };
}
`,
        "reward.ts": `export default function reward({ output }: { output: { sum: string } }) { return output.sum.includes("42") ? 1 : 0; }\n`,
      };
      // The workspace's registered servers, as the web server sends those a run names.
      const mcp_servers = { everything: { command: "mcp-server-everything" }, nothing: { command: "no-such-mcp-server" } };
      expect(await client.start.mutate({ run_id: "mcp-1", workspace_id: "ws-test", kind: "dry-run", files, resume: false, mcp_servers })).toEqual({ ok: true, run_id: "mcp-1" });
      const { events } = await collect(client, { run_id: "mcp-1", after_seq: 0 });
      expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
      const logs = events.flatMap((e) => (e.type === "run.log" ? [e.payload.message] : []));
      expect(logs).toContainEqual(expect.stringMatching(/^MCP server 'local' \(stdio: mcp-server-everything\) is ready: 2 tools \(echo, get-sum\)/));
      expect(logs).toContainEqual(expect.stringMatching(/^MCP server 'remote' \(http: .*\) is ready/));
      expect(logs).toContainEqual(expect.stringMatching(/^MCP server 'broken' \(stdio: no-such-mcp-server\) failed to start/));
      const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
      const good = rollouts.filter((t) => t.group === 0);
      expect(good).toHaveLength(2);
      for (const t of good) {
        expect(t.error).toBeNull();
        expect(t.reward).toBe(1);
      }
      // Group 1 needed the broken server: recorded as MCP errors naming it, the others unaffected.
      for (const t of rollouts.filter((r) => r.group === 1)) {
        expect(t.error).toMatchObject({ kind: "mcp", message: expect.stringContaining("MCP server 'broken'") });
      }
      expect((await client.status.query()).engine.state).toBe("ready");
    } finally {
      await http?.stop();
    }
    // The stdio server processes of the run are gone with it.
    const leftover = descendants().filter((pid) => !before.has(pid));
    const cmd = (pid: number) => { try { return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "); } catch { return "gone"; } };
    // (esbuild's long-lived service process starts with the first bundle of this file's runs: not the run's.)
    expect(leftover.map(cmd).filter((c) => !c.includes("esbuild --service"))).toEqual([]);
  });

  it("keeps a multi-turn tool-use rollout token-exact on the real engine: one sequence, only sampled tokens trained", async () => {
    const compiled = await compileExperiment({
      "scenario.ts": `import { tool, type ChatMessage, type RolloutContext } from "rollbook";
import { z } from "zod";
const add = tool({ name: "add", description: "Add two numbers", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b });
export default async function rollout(ctx: RolloutContext) {
  // An earlier exchange with a tool call and its result (written by hand, so prompt: never trained).
  const messages: ChatMessage[] = [
    { role: "user", content: "What is 1 + 1? Use the add tool." },
    { role: "assistant", content: null, tool_calls: [{ id: "call_0", type: "function", function: { name: "add", arguments: '{"a": 1, "b": 1}' } }] },
    { role: "tool", tool_call_id: "call_0", name: "add", content: "2" },
    { role: "assistant", content: "1 + 1 = 2." },
    { role: "user", content: "What is 2 + 3? Use the add tool." },
  ];
  const first = await ctx.chat(messages, { tools: [add], tool_choice: { type: "function", function: { name: "add" } }, max_tokens: 24 });
  messages.push(first.message);
  for (const call of first.toolCalls) {
    const parsed = add.parseArguments(call.function.arguments);
    messages.push({ role: "tool", tool_call_id: call.id, name: "add", content: parsed.ok ? String(await add.execute(parsed.args, { ctx, toolCallId: call.id })) : "Error: " + parsed.error });
  }
  messages.push({ role: "user", content: "Now say the result in words." });
  const second = await ctx.chat(messages, { tools: [add], max_tokens: 12 });
  const third = await ctx.chat([...messages, second.message, { role: "user", content: "Thanks!" }], { tools: [add], max_tokens: 8 });
  return [first.toolCalls.length, second.content, third.content];
}
`,
      "reward.ts": "export default function reward() { return 1; }\n",
    });
    if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
    const config = RunConfig.parse({ max_context_tokens: 2048 });
    const engine = runner.supervisor.client;
    const done = await executeRollout({
      services: { engine, judge: createJudgeClient(config.judge, config.model, engine), mcp: NO_MCP },
      compiled: compiled.compiled,
      runId: "exact-1",
      config,
      task: { index: 0, line: 1, split: "train", data: {} },
      split: "train",
      step: 1,
      group: 0,
      rolloutIndex: 0,
      model: config.model,
    });
    expect(done.trajectory.error).toBeNull();
    expect(done.turns).toHaveLength(3);
    // The forced call: the prefill is prompt (masked), the model's own continuation is sampled.
    expect(done.trajectory.messages.filter((m) => m.role === "tool").length).toBeGreaterThanOrEqual(1);
    expect(done.trajectory.metrics.turns).toBe(3);
    // Per-turn figures for the transcript: each names the assistant message it sampled, with its tokens.
    const figures = done.trajectory.turns!;
    expect(figures.map((t) => done.trajectory.messages[t.message_index]!.role)).toEqual(["assistant", "assistant", "assistant"]);
    expect(figures.map((t) => t.completion_tokens)).toEqual(done.turns.map((t) => t.completionTokenIds.length));
    expect(figures.map((t) => t.prompt_tokens)).toEqual(done.turns.map((t) => t.promptTokenIds.length));
    expect(figures.every((t) => (t.model_ms ?? 0) > 0)).toBe(true);
    // Each follow-up prompt extends the previous prompt + completion exactly (continue_from), so the
    // rollout is ONE sequence; its trained tokens are exactly the sampled ones, in order, with their logprobs.
    for (let k = 1; k < done.turns.length; k++) {
      const prev = done.turns[k - 1]!;
      const head = [...prev.promptTokenIds, ...prev.completionTokenIds];
      expect(done.turns[k]!.promptTokenIds.slice(0, head.length)).toEqual(head);
    }
    const seqs = done.sample!.sequences;
    expect(seqs).toHaveLength(1);
    const seq = seqs[0]!;
    const trained = seq.tokens.filter((_, i) => seq.mask[i] === 1);
    const trainedLp = seq.logprobs.filter((_, i) => seq.mask[i] === 1);
    expect(trained).toEqual(done.turns.flatMap((t) => t.completionTokenIds));
    expect(trainedLp).toEqual(done.turns.flatMap((t) => t.completionLogprobs!));
    const last = done.turns.at(-1)!;
    expect(seq.tokens).toEqual([...last.promptTokenIds, ...last.completionTokenIds]);
    // Tool results and user turns are masked: everything between completions is prompt.
    expect(seq.mask.filter((m) => m === 0).length).toBe(last.promptTokenIds.length - done.turns.slice(0, -1).reduce((n, t) => n + t.completionTokenIds.length, 0));
  });

  it("dry-runs say-the-word: 4 rollouts with rewards and tokens, resumable after any seq", async () => {
    const spec = { run_id: "dry-1", workspace_id: "ws-test", kind: "dry-run" as const, files: template(small), resume: false };
    expect(await client.start.mutate(spec)).toEqual({ ok: true, run_id: "dry-1" });
    const { events, ids } = await collect(client, { run_id: "dry-1", after_seq: 0 });

    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(ids).toEqual(events.map((e) => String(e.seq)));
    expect(events[0]!.type).toBe("run.started");
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts).toHaveLength(4);
    for (const t of rollouts) {
      expect(t.error).toBeNull();
      expect(typeof t.reward).toBe("number");
      expect(Number.isFinite(t.reward)).toBe(true);
      expect(t.tokens.completion).toBeGreaterThan(0);
      expect(t.tokens.completion).toBeLessThanOrEqual(8);
      expect(t.tokens.prompt).toBeGreaterThan(0);
      expect(t.messages.at(-1)!.role).toBe("assistant");
      expect(t.logs.some((l) => l.includes("asked for"))).toBe(true);
    }
    expect(new Set(rollouts.map((t) => t.group))).toEqual(new Set([0, 1]));
    const step = events.find((e) => e.type === "step.finished");
    expect(step).toMatchObject({ payload: { step: 1, rollouts: 4, trainer: null } });

    // Resume after seq 2: exactly the events after 2, by after_seq and by tRPC's lastEventId.
    const after2 = await collect(client, { run_id: "dry-1", after_seq: 2 });
    expect(after2.events).toEqual(events.slice(2));
    const byLastEventId = await collect(client, { run_id: "dry-1", after_seq: 0, lastEventId: "2" });
    expect(byLastEventId.events).toEqual(events.slice(2));
    // The log is on disk for a restarted runner.
    const lines = fs.readFileSync(path.join(runsDir, "dry-1", "events.jsonl"), "utf8").trim().split("\n");
    expect(lines.map((l) => (JSON.parse(l) as RunEvent).seq)).toEqual(events.map((e) => e.seq));

    // An existing run id without resume is refused; status lists the run.
    const again = await client.start.mutate(spec);
    expect(again.ok).toBe(false);
    const status = await client.status.query();
    expect(status.runs.find((r) => r.run_id === "dry-1")).toMatchObject({ status: "completed", last_seq: events.length });
   }, 300_000); // CPU sampling on a shared machine

  it("refuses a scenario with a type error, with a diagnostic at its line, and creates no run", async () => {
    const broken = `import type { RolloutContext } from "rollbook";
export interface Task { word: string }
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const n: number = ctx.task.word;
  return String(n);
}
`;
    const files = template(small, broken);
    const checked = await client.validate.mutate({ files, kind: "dry-run" });
    expect(checked.ok).toBe(false);
    const result = await client.start.mutate({ run_id: "broken-1", workspace_id: "ws-test", kind: "dry-run", files, resume: false });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const diag = result.diagnostics.find((d) => d.file === "scenario.ts");
    expect(diag).toMatchObject({ file: "scenario.ts", line: 4, severity: "error" });
    expect(checked.diagnostics).toContainEqual(diag);
    expect((await client.status.query()).runs.some((r) => r.run_id === "broken-1")).toBe(false);
  });

  it("records a rollout that loops forever as a timeout while the others finish", async () => {
    const looping = `import type { RolloutContext } from "rollbook";
export interface Task { word: string }
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const reply = await ctx.chat([{ role: "user", content: "Say " + ctx.task.word }]);
  ctx.log("asked for " + ctx.task.word);
  if (ctx.rolloutIndex === 0) { for (;;) { /* spin */ } }
  return reply.content;
}
`;
    const files = template(
      // The CPU limit catches the spin; the wall clock is generous so slow CPU sampling never trips it.
      { ...small, limits: { rollout_timeout_ms: 120_000, cpu_timeout_ms: 1_000, memory_mb: 64 } },
      looping,
    );
    expect(await client.start.mutate({ run_id: "loop-1", workspace_id: "ws-test", kind: "dry-run", files, resume: false })).toMatchObject({ ok: true });
    const { events } = await collect(client, { run_id: "loop-1" });
    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    expect(rollouts).toHaveLength(4);
    const timedOut = rollouts.filter((t) => t.error !== null);
    expect(timedOut.map((t) => t.error!.message)).toHaveLength(2);
    for (const t of timedOut) {
      expect(t.error!.kind).toBe("timeout");
      expect(t.reward).toBeNull();
      expect(t.id).toMatch(/:r0$/);
    }
    for (const t of rollouts.filter((r) => r.error === null)) expect(typeof t.reward).toBe("number");
    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
    expect(events.find((e) => e.type === "step.finished")).toMatchObject({ payload: { exception_rate: 0.5 } });
   }, 300_000);
  it("trains 2 GRPO steps on the real engine, then resumes to step 3 with no step repeated", async () => {
    const config = { ...small, num_steps: 2, eval_every: 0, trainer: { learning_rate: 0.0002, loss: "ppo", micro_batch_size: 4 } };
    // Unique: an external engine (ENGINE_URL) keeps checkpoints across test runs.
    const runId = `train-${Date.now()}`;
    const spec = { run_id: runId, workspace_id: "ws-test", kind: "train" as const, files: template(config), resume: false };
    expect(await client.start.mutate(spec)).toMatchObject({ ok: true });
    const first = await collect(client, { run_id: runId });
    expect(first.events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
    const saved = first.events.flatMap((e) => (e.type === "checkpoint.saved" ? [e.payload.step] : []));
    expect(saved).toEqual([1, 2]);
    const steps = first.events.flatMap((e) => (e.type === "step.finished" ? [e.payload] : []));
    expect(steps.map((m) => m.step)).toEqual([1, 2]);
    for (const m of steps) expect(m.trainer).not.toBeNull();
    const models = first.events.flatMap((e) => (e.type === "rollout.finished" ? [[e.payload.step, e.payload.model]] : []));
    expect(new Set(models.filter(([s]) => s === 2).map(([, m]) => m))).toEqual(new Set([`${runId}@1`]));

    // Resume with a longer schedule: continues after checkpoint 2, the log keeps its numbering.
    const resumed = await client.start.mutate({ ...spec, files: template({ ...config, num_steps: 3 }), resume: true, attempt: 2 });
    expect(resumed).toMatchObject({ ok: true });
    const second = await collect(client, { run_id: runId, after_seq: first.events.length });
    expect(second.events[0]).toMatchObject({ seq: first.events.length + 1, type: "run.started", payload: { resumed_from_step: 2 } });
    expect(second.events.flatMap((e) => (e.type === "checkpoint.saved" ? [e.payload.step] : []))).toEqual([3]);
    expect(second.events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed" } });
  }, 540_000); // three GRPO steps on a shared CPU
});
