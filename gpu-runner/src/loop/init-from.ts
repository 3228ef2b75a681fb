/**
 * Forks on the runner: a train run whose adapter starts from another run's checkpoint (RunSpec.init_from).
 * The checkpoint must be on this runner's engine: the web server knows it from its Checkpoint rows, but a
 * checkpoint can be cleaned up after the row was written, so the runner asks the engine before starting and
 * again when training starts (the engine may have been loading at start). The engine's /train checks the
 * rest (base model, LoRA shape) against the checkpoint's own files.
 */
import type { InitFrom } from "../../../contracts";
import type { EngineClient } from "../engine/client";

/** The model a fork samples its first step from (and evaluates at step 0). */
export const initFromModel = (init: InitFrom) => `${init.run_id}@${init.step}`;

/**
 * Why the fork cannot start (the parent's checkpoint is not on this engine), or null when it is there.
 * `strict: false` answers null when the engine cannot be asked (still loading): the caller checks again later.
 */
export async function initFromProblem(
  engine: Pick<EngineClient, "checkpoints">,
  init: InitFrom,
  opts: { strict: boolean },
): Promise<string | null> {
  let steps: number[];
  try {
    steps = (await engine.checkpoints(init.run_id)).map((c) => c.step);
  } catch (err) {
    if (!opts.strict) return null;
    throw err;
  }
  if (steps.includes(init.step)) return null;
  const have = steps.length > 0 ? `it has ${steps.join(", ")}` : "it has none";
  return `init_from.step: run ${init.run_id} has no checkpoint at step ${init.step} on this runner (${have}; it may have been deleted)`;
}
