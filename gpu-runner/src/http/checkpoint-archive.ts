/**
 * A run's checkpoint as a PEFT folder archive: the .tar.gz of `<run>-step<step>/adapter_config.json` and
 * `adapter_model.safetensors` — what `PeftModel.from_pretrained(base, "<folder>")` loads. The optimizer state
 * and trainer_state.json stay on the runner (they only matter for resuming, and the optimizer is twice the
 * adapter's size).
 *
 * Paths come from a run id and a step, never from the caller: the run id is one folder name of the runs
 * directory's alphabet (assertSafeRunId), the step an integer, and the folder (symlinks resolved) must lie
 * under ROLLBOOK_RUNS_DIR. Only a complete checkpoint is served (trainer_state.json is written last), and
 * only regular files: a symlink planted in the folder is refused, not followed.
 */
import fs from "node:fs/promises";
import path from "node:path";
import { create as createTar } from "tar";
import { assertSafeRunId } from "../events/event-log";
import { identifierRule, isIdentifier } from "../../../contracts";

/** The PEFT files of a checkpoint folder (gpu-runner/engine/rollbook_engine/trainer/checkpoints.py). */
export const PEFT_FILES = ["adapter_config.json", "adapter_model.safetensors"] as const;
/** Marks a checkpoint folder complete (written last). */
const COMPLETE_MARKER = "trainer_state.json";

export class CheckpointNotFound extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CheckpointNotFound";
  }
}

/** `runs/<run>/checkpoints/<step:04d>`, the engine's layout (model_store.checkpoint_dir). */
export function checkpointDir(runsDir: string, runId: string, step: number): string {
  return path.join(runsDir, runId, "checkpoints", String(step).padStart(4, "0"));
}

/** The archive's one top-level folder (what the user passes to PeftModel.from_pretrained after untarring). */
export const archiveFolder = (runId: string, step: number) => `${runId}-step${step}`;

function within(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

/**
 * The checkpoint's folder, checked: a valid run id and step, a complete checkpoint under `runsDir`, both
 * PEFT files regular files. Throws CheckpointNotFound (the caller answers 404) for anything else.
 */
export async function resolveCheckpoint(runsDir: string, runId: string, stepText: string): Promise<{ dir: string; step: number; bytes: number }> {
  try {
    assertSafeRunId(runId);
  } catch (e) {
    throw new CheckpointNotFound((e as Error).message);
  }
  if (!isIdentifier("step", stepText)) {
    throw new CheckpointNotFound(`invalid step ${JSON.stringify(stepText.slice(0, 40))}: ${identifierRule("step")}`);
  }
  const step = Number(stepText);
  const missing = () => new CheckpointNotFound(`run ${runId} has no checkpoint for step ${step} on this runner`);
  let root: string;
  let dir: string;
  try {
    root = await fs.realpath(runsDir);
    dir = await fs.realpath(checkpointDir(runsDir, runId, step));
  } catch {
    throw missing();
  }
  if (!within(root, dir)) throw missing();
  let bytes = 0;
  for (const name of [...PEFT_FILES, COMPLETE_MARKER]) {
    const st = await fs.lstat(path.join(dir, name)).catch(() => null);
    if (!st?.isFile()) throw missing();
    if (name !== COMPLETE_MARKER) bytes += st.size;
  }
  return { dir, step, bytes };
}

/** A gzip'd tar stream of the PEFT files under `<run>-step<step>/` (portable: no owner, user or host in it). */
export function peftArchive(dir: string, runId: string, step: number): NodeJS.ReadableStream {
  return createTar({ gzip: true, cwd: dir, portable: true, prefix: archiveFolder(runId, step) }, [...PEFT_FILES]) as unknown as NodeJS.ReadableStream;
}
