/**
 * How often the run page asks runs.get again (react-query's refetchInterval), from what it last said.
 *
 * Why it keeps asking once a run ended: a stopped or failed run can be resumed by another tab or user, and
 * the page must see it (issue 17 finding 4) even when its socket missed the `run:status` (a reconnect, a
 * web process that never got the broadcast). Slowly, since a resume is rare and the socket usually tells
 * first. A run that does not exist is never asked for again: "not found" is the answer, once.
 */
import type { RunStatus } from "@contracts";
import { isTerminal } from "./status-fold";

export const POLL_QUEUED_MS = 2_000;
export const POLL_ACTIVE_MS = 5_000;
export const POLL_ENDED_MS = 15_000;

/** A tRPC error's code (data.code), if it has one. */
export function errorCode(error: unknown): string | null {
  const code = (error as { data?: { code?: unknown } } | null)?.data?.code;
  return typeof code === "string" ? code : null;
}

export function isNotFound(error: unknown): boolean {
  return errorCode(error) === "NOT_FOUND";
}

export function runPollInterval(status: RunStatus | string | null | undefined, error: unknown): number | false {
  if (status == null) return isNotFound(error) ? false : POLL_ACTIVE_MS;
  if (status === "queued") return POLL_QUEUED_MS; // its place moves as runs ahead of it start
  return isTerminal(status as RunStatus) ? POLL_ENDED_MS : POLL_ACTIVE_MS;
}
