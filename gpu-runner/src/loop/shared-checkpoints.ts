/**
 * Checkpoints on a folder every runner mounts (ROLLBOOK_SHARED_CHECKPOINT_DIR), so a run whose runner was
 * lost (killed, unplugged) continues on another runner from its newest checkpoint.
 *
 * Layout: the engine's own, `<shared>/<run>/checkpoints/<step:04d>/` with all four files (the PEFT adapter,
 * optimizer.pt and trainer_state.json: what the trainer needs to continue exactly; its RNG is derived
 * from the run's seed and the step, so there is no RNG state to carry).
 *
 * Publishing copies a complete local checkpoint into a hidden temp folder on the share and renames it into
 * place, so the share holds a whole checkpoint or none; an existing step is never overwritten. Fetching
 * copies the shared steps up to the step the web server recorded into the local runs folder the engine reads.
 *
 * Fencing: a runner that takes a moved run writes `<shared>/<run>/owner.json` ({ runner: its RUNNER_NAME });
 * from then on only that runner publishes the run's checkpoints. The runner the run left may still be
 * running it (cut off from the web server, not dead) and must not put its own later steps on the share.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { assertSafeRunId } from "../events/event-log";
import { checkpointDir } from "../http/checkpoint-archive";

/** Every file of a checkpoint folder (gpu-runner/engine/rollbook_engine/trainer/checkpoints.py); the last one marks it complete. */
export const CHECKPOINT_FILES = ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "trainer_state.json"] as const;

/**
 * The run's side logs (each rollout's token ids, what training did with each): the token view and the
 * token export read them from the run's runner, so they travel with the run. On the share they are copied
 * whole with each checkpoint (simple, and a few MB per step at most; a line-by-line mirror would put the
 * share's latency into every rollout).
 */
export const SIDE_LOGS = ["tokens.jsonl", "train-logprobs.jsonl"] as const;

const exists = (p: string) => fs.stat(p).then(() => true, () => false);

/** Steps of the run's complete checkpoints under `root` (a runs folder or the share), ascending. */
export async function completeSteps(root: string, runId: string): Promise<number[]> {
  assertSafeRunId(runId);
  const dir = path.join(root, runId, "checkpoints");
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const steps: number[] = [];
  for (const name of names) {
    if (!/^\d{1,10}$/.test(name)) continue;
    if (await exists(path.join(dir, name, "trainer_state.json"))) steps.push(Number(name));
  }
  return steps.sort((a, b) => a - b);
}

/** Copy a checkpoint folder's files into `to` through a temp folder beside it (renamed in one step). */
async function copyCheckpoint(from: string, to: string): Promise<void> {
  await fs.mkdir(path.dirname(to), { recursive: true });
  const tmp = path.join(path.dirname(to), `.tmp-${path.basename(to)}-${randomUUID().slice(0, 8)}`);
  await fs.mkdir(tmp);
  try {
    for (const name of CHECKPOINT_FILES) await fs.copyFile(path.join(from, name), path.join(tmp, name));
    await fs.rename(tmp, to);
  } catch (err) {
    await fs.rm(tmp, { recursive: true, force: true });
    // Another runner published the same step first: theirs stands.
    if ((err as NodeJS.ErrnoException).code === "ENOTEMPTY" || (err as NodeJS.ErrnoException).code === "EEXIST") return;
    throw err;
  }
}

const ownerFile = (sharedDir: string, runId: string) => path.join(sharedDir, runId, "owner.json");

/** The runner that took the run last (null: it never moved, whoever runs it publishes). */
export async function sharedOwner(sharedDir: string, runId: string): Promise<string | null> {
  assertSafeRunId(runId);
  const text = await fs.readFile(ownerFile(sharedDir, runId), "utf8").catch(() => null);
  if (text === null) return null;
  try {
    const runner = (JSON.parse(text) as { runner?: unknown }).runner;
    return typeof runner === "string" ? runner : null;
  } catch {
    return null;
  }
}

/** Mark `runnerName` as the run's only publisher (a move to it), written whole (temp file + rename). */
export async function claimSharedRun(sharedDir: string, runId: string, runnerName: string): Promise<void> {
  assertSafeRunId(runId);
  const file = ownerFile(sharedDir, runId);
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomUUID().slice(0, 8)}.tmp`;
  await fs.writeFile(tmp, JSON.stringify({ runner: runnerName, at: new Date().toISOString() }));
  await fs.rename(tmp, file);
}

/** After the engine saved `step`: copy it to the share (a no-op when the share already has it). */
export async function publishCheckpoint(runsDir: string, sharedDir: string, runId: string, step: number, runnerName: string): Promise<void> {
  assertSafeRunId(runId);
  const owner = await sharedOwner(sharedDir, runId);
  if (owner !== null && owner !== runnerName) {
    throw new Error(`the run was moved to runner '${owner}'; this runner ('${runnerName}') no longer publishes its checkpoints`);
  }
  const to = checkpointDir(sharedDir, runId, step);
  if (!(await exists(path.join(to, "trainer_state.json")))) await copyCheckpoint(checkpointDir(runsDir, runId, step), to);
  for (const name of SIDE_LOGS) await copyWhole(path.join(runsDir, runId, name), path.join(sharedDir, runId, name));
}

/** Copy a file through a temp name and rename (readers see the old or the new copy, never half); a missing source is skipped. */
async function copyWhole(from: string, to: string): Promise<void> {
  if (!(await exists(from))) return;
  const tmp = `${to}.${randomUUID().slice(0, 8)}.tmp`;
  try {
    await fs.copyFile(from, tmp);
    await fs.rename(tmp, to);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Before a moved run continues here: copy its shared checkpoints 1..throughStep that this runner lacks.
 * Returns whether checkpoint `throughStep` is now here (always true for 0: a run with no checkpoint
 * starts over).
 */
export async function fetchSharedCheckpoints(runsDir: string, sharedDir: string, runId: string, throughStep: number): Promise<boolean> {
  if (throughStep === 0) return true;
  const local = new Set(await completeSteps(runsDir, runId));
  for (const step of await completeSteps(sharedDir, runId)) {
    if (step > throughStep || local.has(step)) continue;
    await copyCheckpoint(checkpointDir(sharedDir, runId, step), checkpointDir(runsDir, runId, step));
  }
  for (const name of SIDE_LOGS) {
    if (!(await exists(path.join(runsDir, runId, name)))) await copyWhole(path.join(sharedDir, runId, name), path.join(runsDir, runId, name));
  }
  return exists(path.join(checkpointDir(runsDir, runId, throughStep), "trainer_state.json"));
}

/**
 * Checkpoints here past the step a move continues from were written by an attempt the web server has since
 * superseded (this runner held the run before): the engine would otherwise take the newest as the truth.
 * Moved aside (not deleted) under `<run>/superseded-checkpoints/`, in case someone wants them.
 */
export async function setAsideNewerCheckpoints(runsDir: string, runId: string, afterStep: number): Promise<number[]> {
  const moved: number[] = [];
  for (const step of await completeSteps(runsDir, runId)) {
    if (step <= afterStep) continue;
    const to = path.join(runsDir, runId, "superseded-checkpoints", `${String(step).padStart(4, "0")}-${Date.now()}`);
    await fs.mkdir(path.dirname(to), { recursive: true });
    await fs.rename(checkpointDir(runsDir, runId, step), to);
    moved.push(step);
  }
  return moved;
}
