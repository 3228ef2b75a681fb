/**
 * Which of Stop and Resume the run page offers, from the status it shows (status-fold.ts). One place, so
 * the page and the chaos test's page (server/test/run-page.ts) cannot disagree: a run resumed by anyone
 * offers Stop again as soon as the page knows it runs (issue 17 finding 4).
 */
import type { RunStatus } from "@contracts";
import { isTerminal } from "./status-fold";

export interface RunActions {
  stop: boolean;
  resume: boolean;
}

/** `allowed`: what the caller's role may do (contracts/actions.ts run.stop / run.resume); true for both in tests. */
export function runActions(status: RunStatus | null, kind: string, allowed: boolean | { stop: boolean; resume: boolean }): RunActions {
  const may = typeof allowed === "boolean" ? { stop: allowed, resume: allowed } : allowed;
  if (status === null) return { stop: false, resume: false };
  return {
    stop: may.stop && !isTerminal(status),
    // A train run continues from its newest checkpoint; lost: on the configured runner if its own is gone.
    resume: may.resume && kind === "train" && (status === "stopped" || status === "failed" || status === "lost"),
  };
}
