/**
 * Task sets: the tasks.jsonl parser, uploads of JSON Lines / JSON / CSV / TSV / Parquet, the
 * train/validation split, the canonical tasks.jsonl writer, and the row error they all report.
 * Browser-safe (no Node APIs): the editor, the web server and the runner import the same code.
 */
export { MAX_TASKS_BYTES, MAX_TASKS_JSONL_BYTES, MAX_TASK_ROWS, MAX_REPORTED_ERRORS } from "./limits";
export {
  RowError,
  RowErrorList,
  type RowIssue,
  formatRowError,
  rowErrorToDiagnostic,
  capRowErrors,
  fieldPath,
  fieldColumn,
  rowErrorsFromIssues,
} from "./row-error";
export { TASKS_FILE, SPLIT_KEY, type TaskRow, type ParseTasksResult, parseTasks } from "./parse-tasks";
export type { TaskFileFormat, ImportedRow, ImportResult } from "./import-types";
export { type TaskFile, TASK_FILE_EXTENSIONS, detectTaskFileFormat, importTaskFile } from "./import-file";
export {
  SplitSpec,
  type SplitRow,
  type SplitResult,
  DEFAULT_TRAIN_VALUES,
  DEFAULT_VAL_VALUES,
  applySplit,
} from "./split";
export { toTasksJsonl } from "./write";
export { type ImportTasksResult, importTasks } from "./import-tasks";
