/**
 * The runner's view of tasks.jsonl. The parser lives in the contracts (contracts/tasks) so the
 * editor, the web server and the runner accept and reject exactly the same file.
 */
export { type TaskRow, type ParseTasksResult, parseTasks } from "../../../contracts/tasks";
