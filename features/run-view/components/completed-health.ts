/**
 * What the header says about a completed run whose rollouts did not all succeed, or whose log has warnings.
 *
 * Why rollouts are split by whose failure they are (issue 31): a rollout the runner lost — its connection to
 * the engine cut on the call and on the call sent again (contracts' RUNNER_FAULT_ERROR_KINDS) — is not the
 * experiment's failure. Counting it with the rollouts the user's code failed made a run "Completed with
 * warnings" for the runner's fault; it is said apart, as the runner's, and alone it is no warning about the run.
 */
import type { RunLogLine } from "./run-state";

export interface CompletedHealth {
  /** "Completed with warnings" (the experiment's failures or the log's warnings), or the runner's losses only. */
  heading: "Completed with warnings" | "Completed; the runner lost some rollouts";
  /** Rollouts failed by the experiment (its code, reward, model calls, MCP servers, limits). */
  rolloutErrors: number;
  /** Rollouts the runner lost (its failure, not the experiment's). */
  runnerErrors: number;
  /** The log's distinct warn/error lines. */
  warnings: string[];
}

export function completedHealth(input: { errorCount: number; runnerErrorCount: number; logs: readonly RunLogLine[] }): CompletedHealth | null {
  const runnerErrors = Math.min(input.runnerErrorCount, input.errorCount);
  const rolloutErrors = input.errorCount - runnerErrors;
  const warnings = [...new Set(input.logs.filter((l) => l.level !== "info").map((l) => l.message))];
  if (rolloutErrors === 0 && runnerErrors === 0 && warnings.length === 0) return null;
  const heading = rolloutErrors > 0 || warnings.length > 0 ? "Completed with warnings" : "Completed; the runner lost some rollouts";
  return { heading, rolloutErrors, runnerErrors, warnings };
}
