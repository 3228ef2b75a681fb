/**
 * Model names: a base model a runner serves, or `<run>@<step>`, a run's LoRA checkpoint. The runner and the
 * engine use the runner's run id (`r3f…@3`); the web's OpenAI-compatible endpoint also takes the run's
 * per-workspace number (`12@3`), which it resolves to the run id before anything leaves the web server.
 *
 * The grammar is identifiers.json's, the one the engine parses with too: a name with an `@` is a checkpoint
 * reference and nothing else, so a spelling one side reads as a base model and the other as a checkpoint
 * (`<run>@２`, `<run>@2\n`, `<run>@02`) is no model at all on both: refused, never "a base model name".
 */
import { identifierRule, isIdentifier } from "./identifiers";

export interface CheckpointRef {
  /** A run id, or a run's per-workspace number as digits. */
  run: string;
  step: number;
}

export type ModelName =
  | { kind: "checkpoint"; run: string; step: number }
  | { kind: "base"; name: string }
  | { kind: "invalid"; reason: string };

export const checkpointModelName = (run: string | number, step: number): string => `${run}@${step}`;

/** `<run>@<step>`, a base model name, or why it is neither (the reason reads after "model 'x' "). */
export function classifyModelName(model: string): ModelName {
  if (isIdentifier("checkpoint_model", model)) {
    const at = model.lastIndexOf("@");
    return { kind: "checkpoint", run: model.slice(0, at), step: Number(model.slice(at + 1)) };
  }
  if (model.includes("@")) return { kind: "invalid", reason: `is not a checkpoint '<run>@<step>': ${identifierRule("checkpoint_model")}; the step is ${identifierRule("step")}` };
  if (isIdentifier("base_model", model)) return { kind: "base", name: model };
  return { kind: "invalid", reason: `is not a model name: ${identifierRule("base_model")}` };
}

/** `<run>@<step>` → its parts; null for anything else (a base model name, or no model name at all). */
export function parseCheckpointModel(model: string): CheckpointRef | null {
  const m = classifyModelName(model);
  return m.kind === "checkpoint" ? { run: m.run, step: m.step } : null;
}

/**
 * `<run>@best`: the web's alias for a run's best checkpoint (the highest validation reward among the
 * checkpoints it still has: features/checkpoints/server/best-checkpoint.ts). Only the web server reads it,
 * and turns it into `<run id>@<step>` before anything reaches a runner, so the shared grammar (and the
 * engine) never sees it. Exactly the lowercase suffix `@best` after a run id or number: `@BEST`, `@best2`,
 * `@best\n`, `@@best`, `x@3@best` are no alias (classifyModelName refuses them like any stray `@`).
 */
export const BEST_SUFFIX = "@best";
export const bestModelName = (run: string | number): string => `${run}${BEST_SUFFIX}`;

/** The run of `<run>@best`, or null for any other name. */
export function parseBestModelName(model: string): string | null {
  if (typeof model !== "string" || !model.endsWith(BEST_SUFFIX)) return null;
  const run = model.slice(0, -BEST_SUFFIX.length);
  return isIdentifier("run_id", run) ? run : null;
}

/** A run named by its per-workspace number (`12` in `12@3`), or null when `run` is a run id. */
export function runNumberOf(run: string): number | null {
  return isIdentifier("run_number", run) ? Number(run) : null;
}
