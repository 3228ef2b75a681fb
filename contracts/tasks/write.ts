/**
 * Rows → the canonical tasks.jsonl that an experiment stores: one compact JSON object per line, in row
 * order, with `"split": "val"` (last) on validation rows and no split key on training rows, ending with a
 * newline. parseTasks reads it back to the same tasks.
 */
import { SPLIT_KEY } from "./parse-tasks";

export function toTasksJsonl(rows: readonly { split?: "train" | "val"; data: Record<string, unknown> }[]): string {
  let out = "";
  for (const { split, data } of rows) {
    // A split key inside the data would be read back as the split: the row's own `split` is the truth.
    const { [SPLIT_KEY]: _ignored, ...task } = data;
    out += JSON.stringify(split === "val" ? { ...task, [SPLIT_KEY]: "val" } : task) + "\n";
  }
  return out;
}
