/**
 * An ART user's script, unmodified, to the end on Rollbook: examples/art/tool_agent_ruler.py run by the REAL
 * openpipe-art (its venv: scripts/art-venv.sh) against /api/art/v1 on real parts (the REAL runner with the server
 * tests' shared engine, SmolLM2-135M on CPU, a fresh Postgres). The script does what ART's notebooks do:
 * multi-turn rollouts with an OpenAI `tools` list, `gather_trajectory_groups` with `max_exceptions` and rollouts
 * that raise, RULER (`ruler_score_group`) with a Rollbook model as judge (JSON through `response_format`, no
 * `max_tokens`), `backend.train`, `model.delete_checkpoints()` after every step, a crash after step 2 and a
 * restart that resumes from `get_step()`. Checked: the restart exits 0 at step 3; RULER's scores are the
 * trained rewards; only the newest checkpoint is left, in the list and on the runner's disk; every step once.
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

  it("crashes after step 2 as asked, restarts from get_step() and exits 0 at step 3, with one checkpoint left", async () => {
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
    // RULER's judge (the base model through the ART door) answered in JSON that RULER parsed into one score per
    // trajectory, for some groups at least (a 135M judge sometimes writes more scores than trajectories, and the
    // script keeps that group's own rewards). Without response_format honoured it writes prose: no group scored.
    expect(out.ruler_scores.length).toBeGreaterThan(0);
    for (const s of out.ruler_scores) expect(Number.isFinite(s)).toBe(true);

    const runId = out.model_id;
    // delete_checkpoints after every step: only the newest is left, in the list and on the runner's disk.
    const ckpts = await db().checkpoint.findMany({ where: { runId }, select: { step: true } });
    expect(ckpts.map((c) => c.step)).toEqual([3]);
    const runsDir = stack!.runner.runsDir;
    for (const step of [1, 2]) expect(fs.existsSync(checkpointDir(runsDir, runId, step)), `step ${step} folder`).toBe(false);
    expect(fs.existsSync(checkpointDir(runsDir, runId, 3))).toBe(true);
    // Every step once, across the crash: 3 step rows, each with its trained rollouts; the flaky tool's
    // exceptions of step 1 are failed rollouts.
    const steps = await db().step.findMany({ where: { runId }, orderBy: { step: "asc" }, select: { step: true } });
    expect(steps.map((s) => s.step)).toEqual([1, 2, 3]);
    const failed = await db().trajectory.count({ where: { runId, step: 1, error: { not: Prisma.AnyNull } } });
    expect(failed).toBe(2);
    // Where RULER scored, its score is the trained reward and the script's own is kept as independent_reward.
    const rollouts = await db().trajectory.findMany({ where: { runId, split: "train", error: { equals: Prisma.AnyNull } }, select: { reward: true, metrics: true } });
    expect(rollouts.length).toBe(2 * 2 + 2 * 3 + 2 * 3);
    const judged = rollouts.filter((r) => typeof (r.metrics as Record<string, unknown>).ruler_score === "number");
    expect(judged.length).toBe(out.ruler_scores.length);
    for (const r of judged) {
      const metrics = r.metrics as Record<string, number>;
      expect(metrics.ruler_score).toBe(r.reward);
      expect(metrics.independent_reward).toEqual(expect.any(Number));
    }
  }, 40 * 60_000);
});
