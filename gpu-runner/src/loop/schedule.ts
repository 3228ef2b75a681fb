/**
 * Which training task each group of each step gets. Tasks are consumed in epochs; each epoch is a seeded
 * shuffle of the train split, so the order is a pure function of (seed, step): a resumed run picks up
 * exactly where an uninterrupted one would be, with no task repeated or skipped.
 */
import { deriveSeed, seededShuffle } from "../rollout/seed";

export function epochOrder(taskCount: number, seed: number, epoch: number): number[] {
  const indices = Array.from({ length: taskCount }, (_, i) => i);
  return seededShuffle(indices, deriveSeed(seed, "epoch", epoch));
}

export interface ScheduledGroup {
  group: number;
  /** Index into the train split. */
  taskIndex: number;
  epoch: number;
}

/** The tasks of step `step` (1-based): slots (step-1)·G … step·G-1 of the endless epoch sequence. */
export function tasksForStep(step: number, groupsPerStep: number, taskCount: number, seed: number): ScheduledGroup[] {
  if (step < 1) throw new RangeError(`steps are 1-based, got ${step}`);
  if (taskCount < 1) throw new RangeError("no training tasks");
  const out: ScheduledGroup[] = [];
  const cache = new Map<number, number[]>();
  for (let g = 0; g < groupsPerStep; g++) {
    const slot = (step - 1) * groupsPerStep + g;
    const epoch = Math.floor(slot / taskCount);
    let order = cache.get(epoch);
    if (!order) {
      order = epochOrder(taskCount, seed, epoch);
      cache.set(epoch, order);
    }
    out.push({ group: g, taskIndex: order[slot % taskCount] as number, epoch });
  }
  return out;
}
