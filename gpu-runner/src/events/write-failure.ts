/**
 * What a failed write on the runner's disk means, in words an on-call engineer can act on. The event log
 * throws these (nothing of the failed line stays behind: event-log.ts), the run manager turns them into the
 * run's failure and the runner's refusal of new work ("disk full on runner gpu-1: …").
 */

/** errno codes that mean "this disk has no room" (a quota is a full disk for the runner's purposes). */
const DISK_FULL_CODES = new Set(["ENOSPC", "EDQUOT"]);

const ERRNO_WORDS: Record<string, string> = {
  ENOSPC: "no space left on device",
  EDQUOT: "disk quota exceeded",
  EROFS: "read-only file system",
  EIO: "input/output error",
  EFBIG: "file too large",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
};

/** An engine or runner message that says the disk was full (the engine's checkpoint save, a side log). */
export const DISK_FULL_TEXT = /\bdisk full\b|\bENOSPC\b|no space left on device|\bEDQUOT\b|disk quota exceeded/i;

export function errnoCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** "no space left on device (ENOSPC)", or the error's own message when it has no errno code. */
export function errnoText(err: unknown): string {
  const code = errnoCode(err);
  if (code && ERRNO_WORDS[code]) return `${ERRNO_WORDS[code]} (${code})`;
  return err instanceof Error ? err.message : String(err);
}

export function isDiskFull(err: unknown): boolean {
  const code = errnoCode(err);
  return code !== undefined ? DISK_FULL_CODES.has(code) : DISK_FULL_TEXT.test(err instanceof Error ? err.message : String(err));
}

/**
 * A line of a run's event log that could not be written: the file was cut back to where the line began, the
 * event got no sequence number and nobody saw it.
 */
export class LogWriteError extends Error {
  readonly code: string | undefined;

  constructor(
    readonly file: string,
    cause: unknown,
    /** Bytes of the line that had reached the file before the failure (cut back since). */
    readonly written: number,
    readonly wanted: number,
  ) {
    super(`${errnoText(cause)} writing ${file} (${written} of ${wanted} bytes written, cut back to the last whole line)`, { cause });
    this.name = "LogWriteError";
    this.code = errnoCode(cause);
  }
}

/**
 * The reason a run fails, and new runs are refused, when the runner cannot write: "disk full on runner
 * gpu-1: no space left on device (ENOSPC) writing …/events.jsonl …".
 */
export function writeFailureReason(runnerName: string, err: unknown): string {
  const detail = err instanceof Error ? err.message : String(err);
  if (isDiskFull(err)) return `disk full on runner ${runnerName}: ${detail}`;
  return `cannot write to the disk of runner ${runnerName}: ${detail}`;
}
