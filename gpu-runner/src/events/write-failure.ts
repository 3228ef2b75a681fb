/**
 * What a failed write on the runner's disk means, in words an on-call engineer can act on. The event log
 * throws these (nothing of the failed line stays behind: event-log.ts), the run manager turns them into the
 * run's failure and the runner's refusal of new work ("disk full on runner gpu-1: …").
 */

import path from "node:path";

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
    // Named from the runs folder down (<run>/events.jsonl): the message reaches the run's page, the runner's paths need not.
    super(`${errnoText(cause)} writing ${path.join(path.basename(path.dirname(file)), path.basename(file))} (${written} of ${wanted} bytes written, cut back to the last whole line)`, { cause });
    this.name = "LogWriteError";
    this.code = errnoCode(cause);
  }
}

const prefix = (runnerName: string, err: unknown) => (isDiskFull(err) ? `disk full on runner ${runnerName}` : `cannot write to the disk of runner ${runnerName}`);

/** Why a run failed when one of its writes failed: "disk full on runner gpu-1: no space left on device (ENOSPC) writing <run>/events.jsonl …". */
export function writeFailureReason(runnerName: string, err: LogWriteError): string {
  return `${prefix(runnerName, err)}: ${err.message}`;
}

/**
 * Why the runner refuses new runs ("disk full on runner gpu-1: no space left on device (ENOSPC)"): about
 * the runner only, since every workspace using it may read it (no run id, no path).
 */
export function diskFailureReason(runnerName: string, err: unknown): string {
  const cause = err instanceof LogWriteError ? err.cause : err;
  return `${prefix(runnerName, err)}: ${errnoText(cause)}`;
}
