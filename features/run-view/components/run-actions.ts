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

export function runActions(status: RunStatus | null, kind: string, canWrite: boolean): RunActions {
  if (!canWrite || status === null) return { stop: false, resume: false };
  return {
    stop: !isTerminal(status),
    // A train run continues from its newest checkpoint; lost: on the configured runner if its own is gone.
    resume: kind === "train" && (status === "stopped" || status === "failed" || status === "lost"),
  };
}
