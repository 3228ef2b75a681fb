/**
 * A run's whole event log straight from a runner (the runner's own tRPC client), resolved when the runner
 * ends the stream after run.finished. For server tests that drive a real run on the real engine.
 */
import type { RunEvent } from "@contracts";
import { createRunnerClient } from "@/gpu-runner/src/client";

export function collectRunEvents(runnerUrl: string, token: string, runId: string, timeoutMs = 500_000): Promise<RunEvent[]> {
  const client = createRunnerClient(runnerUrl, token);
  return new Promise((resolve, reject) => {
    const events: RunEvent[] = [];
    const timer = setTimeout(() => (sub.unsubscribe(), reject(new Error(`run ${runId} did not finish; ${events.length} events`))), timeoutMs);
    const sub = client.events.subscribe(
      { run_id: runId, after_seq: 0 },
      {
        onData: (t) => events.push(t.data as RunEvent),
        onComplete: () => (clearTimeout(timer), resolve(events)),
        onError: (err) => (clearTimeout(timer), reject(err)),
      },
    );
  });
}
