/**
 * An ART user's script, unmodified, to the end on Rollbook: examples/art/tool_agent_ruler.py run by the REAL
 * openpipe-art (its venv: scripts/art-venv.sh) against /api/art/v1 on real parts (the REAL runner with the server
 * tests' shared engine, SmolLM2-135M on CPU, a fresh Postgres). The script does what ART's notebooks do:
 * multi-turn rollouts with an OpenAI `tools` list, `gather_trajectory_groups` with `max_exceptions` and rollouts
 * that raise, RULER (`ruler_score_group`) with a Rollbook model as judge (JSON through `response_format`, no
 * `max_tokens`), `backend.train`, `model.delete_checkpoints()` after every step, a crash after step 2 and a
 * restart that resumes from `get_step()`. Checked: the restart exits 0 at step 3; where RULER scored, its scores
 * are the trained rewards; only the newest checkpoint is left, in the list and on the runner's disk; every step
 * once. And RULER scoring a fixed group through the ART door, with the same judge.
 *   npx vitest run --project server features/art/server/art-user-script.servertest.ts
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "@/gpu-runner/src/env";
import { checkpointDir } from "@/gpu-runner/src/http/checkpoint-archive";
import { startArtStack, type ArtStack } from "@/server/test/art-stack";
import { resetEnv } from "@/server/env";
import { Prisma } from "@/generated/prisma/client";

const TOKEN = "art-user-script-servertest-token-0123456789";
const engineAvailable = fs.existsSync(loadRunnerEnv({ ...process.env, RUNNER_TOKEN: TOKEN }).ENGINE_PYTHON);
const ROOT = path.resolve(import.meta.dirname, "../../..");
const exec = promisify(execFile);

let stack: ArtStack | undefined;
let workDir: string;
const db = () => stack!.tdb.handle.prisma;
const savedDefault = process.env.API_MAX_TOKENS_DEFAULT;

describe.skipIf(!engineAvailable)("an unmodified ART script: tools, exceptions, RULER through Rollbook, delete_checkpoints, crash and resume", () => {
  let python: string;

  beforeAll(async () => {
    const venv = await exec("bash", [path.join(ROOT, "scripts/art-venv.sh")], { timeout: 20 * 60_000, maxBuffer: 10 * 1024 * 1024 });
    python = venv.stdout.trim().split("\n").at(-1)!;
    // RULER's judge sets no max_tokens: the door's default bounds it (a smaller one than the shipped 1,024,
    // which a CPU engine takes a minute to write).
    process.env.API_MAX_TOKENS_DEFAULT = "300";
    resetEnv();
    stack = await startArtStack({ name: "art-user-script-servertest", runnerToken: TOKEN });
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-art-script-")); // ART writes .art/… history here
  }, 25 * 60_000);

  afterAll(async () => {
    if (savedDefault === undefined) delete process.env.API_MAX_TOKENS_DEFAULT;
    else process.env.API_MAX_TOKENS_DEFAULT = savedDefault;
    resetEnv();
    await stack?.close();
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  const script = (extra: Record<string, string>) =>
    exec(python, [path.join(ROOT, "examples/art/tool_agent_ruler.py")], {
      cwd: workDir,
      timeout: 20 * 60_000,
      maxBuffer: 10 * 1024 * 1024,
      env: { ...process.env, ROLLBOOK_URL: stack!.webUrl, ROLLBOOK_API_KEY: stack!.apiKey, STEPS: "3", LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled", ...extra },
    });

  it("RULER (ruler_score_group) with a Rollbook model as judge returns a score per trajectory", async () => {
    // A fixed group, greedy (temperature 0) on the batch-invariant engine: the judge writes the same JSON every
    // time. Before response_format was honoured it wrote prose, and RULER raised "Invalid JSON".
    const script = [
      "import asyncio, json, art",
      "from art.rewards import ruler_score_group",
      "SYS = {'role': 'system', 'content': 'You are a weather assistant. Answer in one sentence.'}",
      "ASK = {'role': 'user', 'content': 'How warm is it in Oslo right now?'}",
      "ANSWERS = ['It is 13 C in Oslo right now.', 'I do not know.', 'Oslo is the capital of Norway.']",
      "async def main():",
      "    group = art.TrajectoryGroup([art.Trajectory(messages_and_choices=[SYS, ASK, {'role': 'assistant', 'content': a}], reward=0.0) for a in ANSWERS])",
      `    judged = await ruler_score_group(group, judge_model='openai/SmolLM2-135M-Instruct', extra_litellm_params={'api_base': '${stack!.webUrl}/api/art/v1', 'api_key': '${stack!.apiKey}', 'temperature': 0})`,
      "    print(json.dumps([t.reward for t in judged.trajectories]))",
      "asyncio.run(main())",
    ].join("\n");
    const { stdout } = await exec(python, ["-c", script], { cwd: workDir, timeout: 10 * 60_000, env: { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "True", WANDB_MODE: "disabled" } });
    const scores = JSON.parse(stdout.trim().split("\n").at(-1)!) as number[];
    expect(scores).toHaveLength(3);
    for (const s of scores) expect(Number.isFinite(s)).toBe(true);
  }, 15 * 60_000);

  it("crashes after step 2 as asked, restarts from get_step() and exits 0 at step 3, with one checkpoint left", async () => {
    // A smaller default here: the 135M judge's calls end sooner (most groups keep their own rewards either way),
    // which keeps this script's six judge calls from taking most of the test's time on a CPU engine.
    process.env.API_MAX_TOKENS_DEFAULT = "120";
    resetEnv();
    const crashed = await script({ CRASH_AFTER_STEP: "2" }).then(
      () => null,
      (e: { code?: number; stderr?: string; stdout?: string }) => e,
    );
    expect(crashed, "the first run must crash after step 2").not.toBeNull();
    expect(crashed!.stderr).toContain("crashing after step 2");
    expect(crashed!.stdout).toContain("step 2: trained");

    const { stdout } = await script({});
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as { model_id: string; start_step: number; final_step: number; ruler_scores: number[] };
    expect(out).toMatchObject({ start_step: 2, final_step: 3 });
    // RULER's judge (the base model through the ART door) scored the groups it could: a 135M judge often writes
    // more scores than a group has trajectories (RULER then raises, and the script keeps the group's own
    // rewards, as RULER's swallow_exceptions advises); the test above shows it scoring a group.
    for (const s of out.ruler_scores) expect(Number.isFinite(s)).toBe(true);

    const runId = out.model_id;
    // delete_checkpoints after every step: only the newest is left, in the list and on the runner's disk.
    const ckpts = await db().checkpoint.findMany({ where: { runId }, select: { step: true } });
    expect(ckpts.map((c) => c.step)).toEqual([3]);
    const runsDir = stack!.runner.runsDir;
    for (const step of [1, 2]) expect(fs.existsSync(checkpointDir(runsDir, runId, step)), `step ${step} folder`).toBe(false);
    expect(fs.existsSync(checkpointDir(runsDir, runId, 3))).toBe(true);
    // Every step once, across the crash: 3 step rows, each with its trained rollouts; the flaky tool's
    // exceptions of step 1 are failed rollouts — of the groups RULER did not score: a scored group is a new
    // TrajectoryGroup of its trajectories only (ART's art/rewards/ruler.py drops the group's exceptions), so
    // they never reach Rollbook (a CI run where the judge scored one step-1 group stored 1, not 2).
    const steps = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
    const failed = await db().trajectory.count({ where: { runId, step: 1, error: { not: Prisma.AnyNull } } });
    const step1 = await db().trajectory.findMany({ where: { runId, step: 1, error: { equals: Prisma.AnyNull } }, select: { group: true, metrics: true } });
    const scoredGroups = new Set(step1.filter((t) => typeof (t.metrics as Record<string, unknown>).ruler_score === "number").map((t) => t.group));
    expect(failed).toBe(2 - scoredGroups.size);
    // Where RULER scored, its score is the trained reward and the script's own is kept as independent_reward.
    const rollouts = await db().trajectory.findMany({ where: { runId, split: "train", error: { equals: Prisma.AnyNull } }, select: { reward: true, metrics: true } });
    expect(rollouts.length).toBe(2 * 2 + 2 * 3 + 2 * 3);
    const judged = rollouts.filter((r) => typeof (r.metrics as Record<string, unknown>).ruler_score === "number");
    expect(judged.length).toBeGreaterThanOrEqual(out.ruler_scores.length); // the resumed run printed only its own
    for (const r of judged) {
      const metrics = r.metrics as Record<string, number>;
      expect(metrics.ruler_score).toBe(r.reward);
      expect(metrics.independent_reward).toEqual(expect.any(Number));
    }
  }, 40 * 60_000);
});
