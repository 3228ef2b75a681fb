"use client";
/**
 * The run header's honesty notes: what the status badge alone does not say. A run whose runner stopped
 * answering ("runner lost", since when, what happens next), and a run that completed although some of its
 * rollouts failed or its log has warnings — visible in the header, not only in the Logs tab.
 */
import type { RunKind, RunStatus } from "@contracts";
import { fmtAgo, fmtDateTime, fmtInt, ordinal } from "@/components/ui/format";
import type { RunLogLine } from "./run-state";
import { completedHealth } from "./completed-health";

/** At most this many distinct warnings are quoted in the header (the Logs tab has them all). */
const MAX_QUOTED = 3;

export function RunHealthNotes({
  status,
  kind,
  lostSince,
  queuePosition = null,
  rolloutCount,
  errorCount,
  runnerErrorCount = 0,
  logs,
}: {
  status: RunStatus | string;
  kind: RunKind;
  lostSince: Date | string | null;
  /** A waiting queued run's place (1 = next); null while a runner is starting it. */
  queuePosition?: number | null;
  rolloutCount: number;
  errorCount: number;
  /** Of errorCount, the rollouts the runner lost (its failure, not the experiment's: completed-health.ts). */
  runnerErrorCount?: number;
  logs: readonly RunLogLine[];
}) {
  if (status === "queued") {
    return (
      <div data-testid="run-queued" className="mt-2 rounded border border-zinc-700 bg-zinc-900 px-2.5 py-1.5 text-[12px] text-zinc-300">
        {queuePosition
          ? `${ordinal(queuePosition)} in queue: it starts when a runner that fits it has room (Settings → Runners).`
          : "Starting on a runner…"}
      </div>
    );
  }
  if (status === "lost" && (kind === "art" || kind === "tinker")) {
    // An ART or Tinker run has no runner loop: its client went quiet (ART_CLIENT_SILENT_MS).
    return (
      <div data-testid="run-lost" className="mt-2 rounded border border-amber-800 bg-amber-950/40 px-2.5 py-1.5 text-[12px] text-amber-200">
        The {kind === "tinker" ? "Tinker" : "ART"} client has sent nothing{lostSince ? ` since ${fmtDateTime(lostSince)} (${fmtAgo(lostSince)})` : ""}. The run continues here with its
        next call.
      </div>
    );
  }
  if (status === "lost") {
    return (
      <div data-testid="run-lost" className="mt-2 rounded border border-amber-800 bg-amber-950/40 px-2.5 py-1.5 text-[12px] text-amber-200">
        Runner not answering{lostSince ? ` since ${fmtDateTime(lostSince)} (${fmtAgo(lostSince)})` : ""}: no events arrive and its status call fails.
        The run may still be going there; it continues here when the runner answers, and fails if the runner comes back without it.
        Stop works now (the runner is told once it answers).
      </div>
    );
  }
  if (status !== "completed") return null;
  const health = completedHealth({ errorCount, runnerErrorCount, logs });
  if (!health) return null;
  const { rolloutErrors, runnerErrors, warnings } = health;
  // Only the experiment's failures and the log's warnings warn about the run; the runner's losses are said apart.
  const warned = health.heading === "Completed with warnings";
  const leftOut = kind === "train" ? " (left out of training and of the mean reward)" : " (left out of the mean reward)";
  return (
    <div
      data-testid={warned ? "run-warnings" : "run-runner-losses"}
      className={`mt-2 rounded border px-2.5 py-1.5 text-[12px] ${warned ? "border-amber-800 bg-amber-950/40 text-amber-200" : "border-zinc-700 bg-zinc-900 text-zinc-300"}`}
    >
      <div className="font-medium">{health.heading}</div>
      {rolloutErrors > 0 && (
        <div>
          {fmtInt(rolloutErrors)} of {fmtInt(rolloutCount)} rollouts failed{leftOut}.
        </div>
      )}
      {runnerErrors > 0 && (
        <div data-testid="run-runner-faults">
          {fmtInt(runnerErrors)} of {fmtInt(rolloutCount)} rollouts were lost by the runner: its connection to the engine was cut on a model call and again when
          it sent the call once more (error kind engine_connection). The runner&apos;s failure, not your code&apos;s{leftOut}.
        </div>
      )}
      {warnings.length > 0 && (
        <ul className="mt-0.5 list-disc pl-4">
          {warnings.slice(0, MAX_QUOTED).map((w) => (
            <li key={w} className="break-words">
              {w}
            </li>
          ))}
          {warnings.length > MAX_QUOTED && <li className="list-none text-amber-300/70">…and {warnings.length - MAX_QUOTED} more in Logs.</li>}
        </ul>
      )}
    </div>
  );
}
