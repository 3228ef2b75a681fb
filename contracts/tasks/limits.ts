import { formatBytes } from "../bytes";
import { EXPERIMENT_MAX_BYTES } from "../experiment/files";

export { formatBytes, utf8ByteLength } from "../bytes";

/**
 * How big a task set may be. One limit for what a user uploads and for the tasks.jsonl it becomes, because
 * the stored file is what every later step carries: it is saved in each experiment version, travels in
 * the body of every run start, is parsed by the editor on each keystroke-debounce and loaded into Monaco.
 *
 * 50 MB / 100,000 rows holds the RL task sets people actually train on with room to spare (GSM8K train is
 * 7,473 rows and about 4 MB as JSONL; MATH is 12,500 rows, about 10 MB) while keeping a browser tab, a
 * request body and a Postgres row comfortably sized. A run samples a few thousand tasks at most, so a
 * larger file is almost always a whole corpus uploaded by mistake; the message says how to cut it down.
 */

/** Largest uploaded file, in bytes (decimal megabytes, as file browsers show). */
export const MAX_TASKS_BYTES = 50_000_000;
/**
 * Largest tasks.jsonl: it lives inside the experiment, whose files together are capped at
 * EXPERIMENT_MAX_BYTES (8 MB). An uploaded file may be bigger (Parquet compresses, columns get dropped).
 */
export const MAX_TASKS_JSONL_BYTES = EXPERIMENT_MAX_BYTES;
/** Most rows (tasks) in one file. */
export const MAX_TASK_ROWS = 100_000;
/** Errors listed for one file; the rest are summed up in one final entry so 10,000 bad lines stay readable. */
export const MAX_REPORTED_ERRORS = 50;

/** Exact bytes too: just over the limit, both sizes round to the same "50 MB". */
/** `what`: "the file", or "the tasks.jsonl made from it". */
export function tooLargeMessage(bytes: number, what = "the file", limit = MAX_TASKS_BYTES): string {
  return (
    `${what} is ${formatBytes(bytes)} (${bytes.toLocaleString("en-US")} bytes); ` +
    `the limit is ${formatBytes(limit)} (${limit.toLocaleString("en-US")} bytes). ` +
    `Upload a sample of the rows (a run only draws a few thousand tasks) or drop columns the scenario does not use.`
  );
}

export function tooManyRowsMessage(rows: number): string {
  return (
    `the file has ${rows.toLocaleString("en-US")} rows; the limit is ${MAX_TASK_ROWS.toLocaleString("en-US")}. ` +
    `Upload a sample of the rows (a run only draws a few thousand tasks).`
  );
}
