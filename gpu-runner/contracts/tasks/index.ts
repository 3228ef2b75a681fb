/**
 * Task sets: the tasks.jsonl parser, the canonical tasks.jsonl writer, and the row error they report.
 * Browser-safe (no Node APIs): the editor, the web server and the runner import the same code.
 */
export { MAX_TASKS_BYTES, MAX_TASK_ROWS, MAX_REPORTED_ERRORS, formatBytes } from "./limits";
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
export { toTasksJsonl } from "./write";
