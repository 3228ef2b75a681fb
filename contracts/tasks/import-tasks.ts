/**
 * Upload → split → tasks.jsonl text: the whole import in one call, for the upload dialog. All or nothing,
 * like each step: any bad row, or a tasks.jsonl over the size limit, gives errors and no text.
 */
import { MAX_TASKS_JSONL_BYTES, tooLargeMessage, utf8ByteLength } from "./limits";
import { type RowError } from "./row-error";
import { TASKS_FILE } from "./parse-tasks";
import { importTaskFile, type TaskFile } from "./import-file";
import { type SplitSpec, applySplit } from "./split";
import { toTasksJsonl } from "./write";
import type { TaskFileFormat } from "./import-types";

export type ImportTasksResult =
  | { ok: true; format: TaskFileFormat; text: string; train: number; val: number }
  | { ok: false; errors: RowError[]; errorCount: number };

/**
 * The size is checked again on the result: JSON Lines repeat every key on every row, so a CSV or Parquet
 * file under the limit can make a tasks.jsonl over it.
 */
export async function importTasks(file: TaskFile, split: SplitSpec): Promise<ImportTasksResult> {
  const imported = await importTaskFile(file);
  if (!imported.ok) return { ok: false, errors: imported.errors, errorCount: imported.errorCount };
  const splitted = applySplit(imported.rows, split);
  if (!splitted.ok) return splitted;
  const text = toTasksJsonl(splitted.rows);
  const bytes = utf8ByteLength(text);
  if (bytes > MAX_TASKS_JSONL_BYTES) {
    return { ok: false, errors: [{ message: tooLargeMessage(bytes, `the ${TASKS_FILE} made from it`, MAX_TASKS_JSONL_BYTES) }], errorCount: 1 };
  }
  return { ok: true, format: imported.format, text, train: splitted.train, val: splitted.val };
}
