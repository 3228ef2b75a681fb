/**
 * The token view's data end to end on real parts: the REAL runner (in this process) with its REAL engine
 * (SmolLM2-135M on CPU), one 1-step train run started through the web API whose two groups are a trained
 * one and a zero-variance one (reward.ts gives every rollout of the "flat" task 0.5), then runs.rolloutTokens
 * as a viewer: what comes back is what the runner recorded, the trainer computed and the engine decoded. The
 * flat task's replies are a forced tool call, so each sampled token's role (content or scaffolding, decided by
 * the engine's tool format) is seen arriving in the view.
 *   npx vitest run --project server features/token-view/server/rollout-tokens.servertest.ts
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RolloutTokens } from "@contracts";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import type { RunnerServer } from "@/gpu-runner/src/server";
import { startTestRunner, type TestRunner } from "@/gpu-runner/src/test-support/test-runner";
import { registerRunner } from "@/server/runner-client";
import { callerAs, callerFor, closedPort, createTestDb, newWorkspace, templateFiles, type TestDb } from "@/server/test/harness";
import { ingestEvents } from "@/features/run-lifecycle/server";
import { ensureDefaultExperiment } from "@/features/workspace/server";
import { collectRunEvents } from "@/server/test/collect-run-events";

const TOKEN = "rollout-tokens-servertest-token-0123456789";
const ENGINE_PYTHON = loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON;
const engineAvailable = fs.existsSync(ENGINE_PYTHON);
if (!engineAvailable) console.warn(`rollout-tokens.servertest: skipped, no engine python at ${ENGINE_PYTHON} (npm run setup)`);

/** The sampler (KV cache, left padding) and the trainer (full sequence) run the same fp32 weights on CPU. */
const MAX_ABS_LOG_RATIO = 0.05;

// Two train tasks, no validation: the "flat" task's group always ties (no reward variance, not trained);
// the other's rewards are the reply's length, which 4 samples at temperature 1 do not all share.
const TASKS = ['{"word": "apple", "flat": true}', '{"word": "river"}'].join("\n") + "\n";
const REWARD = `import type { RewardInput, RewardResult } from "rollbook";
export default function reward({ task, output }: RewardInput<{ word: string; flat?: boolean }, string>): RewardResult {
  return { reward: task.flat ? 0.5 : output.length / 10 };
}
`;

// The flat task's reply is a call to `say` (a named tool_choice: the engine writes the call up to its arguments,
// the model the rest under the schema's grammar); the other task's reply is prose.
const SCENARIO = `import { tool, type ChatMessage, type RolloutContext } from "rollbook";
const say = tool({
  name: "say",
  description: "Say a word",
  parameters: { type: "object", properties: { word: { type: "string", enum: ["apple", "river"] } }, required: ["word"], additionalProperties: false },
  execute: (args) => String(args.word),
});
export default async function rollout(ctx: RolloutContext<{ word: string; flat?: boolean }>): Promise<string> {
  const messages: ChatMessage[] = [
    { role: "system", content: "Answer with one word." },
    { role: "user", content: \`Say the word \${ctx.task.word}.\` },
  ];
  if (!ctx.task.flat) return (await ctx.chat(messages)).content;
  const reply = await ctx.chat(messages, { tools: [say], tool_choice: { type: "function", function: { name: "say" } }, max_tokens: 24 });
  return reply.toolCalls[0]?.function.arguments ?? reply.content;
}
`;

let tdb: TestDb;
let testRunner: TestRunner | undefined;
let runner: RunnerServer;
let runsDir: string;
let engineLogs: string[] = [];
const db = () => tdb.handle.prisma;

const collect = (runId: string) => collectRunEvents(runner.url, TOKEN, runId);

describe.skipIf(!engineAvailable)("runs.rolloutTokens (real runner, real engine, one 1-step train run)", () => {
  let ws: string;
  let runId: string;
  let rollouts: {
    id: string;
    task: { flat?: boolean };
    tokens: { completion: number };
    messages: { role: string; content: string | null; tool_calls?: { function: { name: string; arguments: string } }[] }[];
  }[];
  const views = new Map<string, RolloutTokens>();

  beforeAll(async () => {
    tdb = await createTestDb();
    testRunner = await startTestRunner({ name: "rollout-tokens-servertest", token: TOKEN, engine: "shared" });
    ({ server: runner, runsDir, engineLogs } = testRunner);
    ws = await newWorkspace(db());
    const runnerName = `tokens-${ws}`;
    await registerRunner(db(), { name: runnerName, url: runner.url, token: TOKEN });
    const { id: experimentId } = await ensureDefaultExperiment(db(), ws);
    const files = {
      ...templateFiles({ num_steps: 1, groups_per_step: 2, rollouts_per_group: 4, eval_every: 0, sampling: { temperature: 1.0, max_tokens: 12 }, limits: { rollout_timeout_ms: 400_000 } }),
      "scenario.ts": SCENARIO,
      "reward.ts": REWARD,
      "tasks.jsonl": TASKS,
    };
    const started = await callerFor(db(), ws, runnerName).runs.start({ experimentId, files, kind: "train" });
    if (!started.ok) throw new Error(`start refused: ${started.error}`);
    runId = started.runId;
    const events = await collect(runId);
    const end = events.at(-1);
    if (end?.type !== "run.finished" || end.payload.status !== "completed") {
      const logs = events.filter((e) => e.type === "run.log").map((e) => JSON.stringify(e.payload));
      throw new Error(`run did not complete: ${JSON.stringify(end?.payload)}\n${logs.join("\n")}\n--- engine log ---\n${engineLogs.slice(-30).join("\n")}`);
    }
    await ingestEvents(db(), runId, events);
    rollouts = (await db().trajectory.findMany({ where: { runId, split: "train" }, orderBy: { id: "asc" } })) as unknown as typeof rollouts;
    const first = `${runner.url}/runs/${encodeURIComponent(runId)}/rollouts/${encodeURIComponent(rollouts[0]!.id)}/tokens`;
    const raw = await fetch(first, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (!raw.ok) {
      const head = fs.readFileSync(path.join(runsDir, runId, "tokens.jsonl"), "utf8").slice(0, 600);
      throw new Error(`runner answered ${raw.status} for ${first}: ${await raw.text()} (tokens.jsonl: ${head})`);
    }
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    for (const r of rollouts) views.set(r.id, await viewer.runs.rolloutTokens({ runId, rolloutId: r.id }));
  }, 600_000);

  afterAll(async () => {
    await testRunner?.close();
    await tdb?.drop();
  }, 60_000);

  it("a trained rollout: every sampled token has the trainer's logprob and a ratio near 1; texts are the reply", () => {
    const trained = rollouts.filter((r) => !r.task.flat);
    expect(trained).toHaveLength(4);
    const logRatios: number[] = [];
    for (const r of trained) {
      const v = views.get(r.id)!;
      expect(v.training).toMatchObject({ status: "trained", step: 1, advantage: expect.any(Number) });
      const tokens = v.sequences.flatMap((s) => s.tokens);
      const sampled = tokens.filter((t) => t.sampled);
      expect(sampled.length).toBe(r.tokens.completion);
      expect(tokens.filter((t) => !t.sampled).every((t) => t.trainer_logprob === null && t.sampling_logprob === null && !t.trained)).toBe(true);
      for (const t of sampled) {
        expect(t.trained).toBe(true);
        expect(t.trainer_logprob).toEqual(expect.any(Number));
        expect(t.ratio).toBeCloseTo(Math.exp(t.trainer_logprob! - t.sampling_logprob!), 9);
        logRatios.push(Math.abs(t.trainer_logprob! - t.sampling_logprob!));
      }
      // The decoded pieces of what the model sampled spell its reply (plus the end-of-turn token). A character
      // whose UTF-8 bytes are split across tokens decodes piece by piece to U+FFFD (as OpenAI's logprobs tokens
      // do), so where the model sampled such characters only the rest of the text is compared.
      const reply = r.messages.at(-1)!.content ?? "";
      const pieces = sampled.map((t) => t.text).join("");
      const ascii = (text: string) => [...text].filter((c) => c.charCodeAt(0) < 128).join("");
      if (pieces.includes("\uFFFD")) expect(ascii(pieces)).toContain(ascii(reply));
      else expect(pieces).toContain(reply);
      // The prompt's pieces are the chat template's text, special tokens included.
      expect(tokens[0]!.text).toBe("<|im_start|>");
      // Each token's role reached the view: no tools were offered, so the reply is content, and only a sampled
      // end of turn is scaffolding; prompt tokens have no role.
      for (const t of sampled) expect(t.role).toBe(t.text === "<|im_end|>" ? "scaffolding" : "content");
      expect(tokens.filter((t) => !t.sampled).every((t) => t.role === null)).toBe(true);
    }
    expect(Math.max(...logRatios)).toBeLessThan(MAX_ABS_LOG_RATIO);
  });

  it("a zero-variance group's rollouts: sampled but not trained, no trainer logprob, no ratio", () => {
    const flat = rollouts.filter((r) => r.task.flat);
    expect(flat).toHaveLength(4);
    for (const r of flat) {
      const v = views.get(r.id)!;
      // The web server adds the raw advantage (reward − group mean: 0 in a tied group) and the run's scale_rewards.
      expect(v.training).toEqual({ status: "not_trained", step: 1, advantage: null, raw_advantage: 0, scale_rewards: true });
      const tokens = v.sequences.flatMap((s) => s.tokens);
      expect(tokens.filter((t) => t.sampled).length).toBe(r.tokens.completion);
      expect(tokens.every((t) => !t.trained && t.trainer_logprob === null && t.ratio === null)).toBe(true);
      expect(tokens.filter((t) => t.sampled).every((t) => typeof t.sampling_logprob === "number")).toBe(true);
      // A forced call: the sampled tokens write its arguments (content), then the closing `}` of the envelope,
      // `</tool_call>` and the end of turn (scaffolding). The prefill up to `"arguments":` is prompt.
      const call = r.messages.at(-1)!.tool_calls?.[0];
      expect(call?.function.name).toBe("say");
      const sampled = tokens.filter((t) => t.sampled);
      const text = (role: string) => sampled.filter((t) => t.role === role).map((t) => t.text).join("");
      expect(text("content")).toContain(call!.function.arguments);
      expect(text("scaffolding")).toMatch(/<\/tool_call>\s*<\|im_end\|>$/);
      expect(text("content")).not.toContain("tool_call");
    }
  });

  it("the runner's route needs the runner bearer token", async () => {
    const url = `${runner.url}/runs/${encodeURIComponent(runId)}/rollouts/${encodeURIComponent(rollouts[0]!.id)}/tokens`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: "Bearer wrong-token-0123456789abcdef" } })).status).toBe(401);
    expect((await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await fetch(`${runner.url}/runs/..%2Fx/rollouts/a/tokens`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
  });

  it("clear errors: an unknown rollout, another workspace's run, an unreachable runner", async () => {
    const viewer = await callerAs(db(), ws, { role: "viewer" });
    await expect(viewer.runs.rolloutTokens({ runId, rolloutId: "s9-9-9" })).rejects.toMatchObject({ code: "NOT_FOUND", message: expect.stringContaining("no rollout s9-9-9") });
    const other = await newWorkspace(db());
    await expect(callerFor(db(), other).runs.rolloutTokens({ runId, rolloutId: rollouts[0]!.id })).rejects.toMatchObject({ code: "NOT_FOUND" });
    const { runnerId } = await db().run.findUniqueOrThrow({ where: { id: runId }, select: { runnerId: true } });
    const closed = await registerRunner(db(), { name: `closed-${ws}`, url: `http://127.0.0.1:${await closedPort()}`, token: TOKEN });
    await db().run.update({ where: { id: runId }, data: { runnerId: closed.id } });
    try {
      await expect(viewer.runs.rolloutTokens({ runId, rolloutId: rollouts[0]!.id })).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE", message: expect.stringContaining("unreachable") });
    } finally {
      await db().run.update({ where: { id: runId }, data: { runnerId } });
    }
  });
});
