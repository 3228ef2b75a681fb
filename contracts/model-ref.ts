/**
 * Model names that point at a run's LoRA checkpoint: `<run>@<step>`. The runner and the engine use the
 * runner's run id (`cm3…@3`); the web's OpenAI-compatible endpoint also takes the run's per-workspace number
 * (`12@3`), which it resolves to the run id before anything leaves the web server. Anything else is a base
 * model name.
 */
export interface CheckpointRef {
  /** A run id, or a run's per-workspace number as digits. */
  run: string;
  step: number;
}

const CHECKPOINT_MODEL = /^(?<run>[^@\s]+)@(?<step>\d{1,9})$/;

export const checkpointModelName = (run: string | number, step: number): string => `${run}@${step}`;

/** `<run>@<step>` → its parts; null for anything else (a base model name). */
export function parseCheckpointModel(model: string): CheckpointRef | null {
  const m = CHECKPOINT_MODEL.exec(model);
  return m?.groups ? { run: m.groups.run!, step: Number(m.groups.step) } : null;
}
