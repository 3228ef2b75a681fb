/**
 * A run's whole event log straight from a runner (the runner's own tRPC client), resolved when the runner
 * ends the stream after run.finished. For server tests that drive a real run on the real engine. A run
 * just started is queued first (features/run-lifecycle/server/dispatcher.ts): until the runner has it, the subscription
 * is refused (NOT_FOUND) and asked again.
 */
import type { RunEvent } from "@contracts";
import { createRunnerClient } from "@/gpu-runner/src/client";

export function collectRunEvents(
  runnerUrl: string,
  token: string,
  runId: string,
  timeoutMs = 500_000,
  /** Sees each event as it arrives (a chaos test breaks something at a chosen moment of the run). */
  onEvent?: (event: RunEvent, soFar: readonly RunEvent[]) => void,
): Promise<RunEvent[]> {
  const client = createRunnerClient(runnerUrl, token);
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    let events: RunEvent[] = [];
    let sub: { unsubscribe(): void } | null = null;
    const timer = setTimeout(() => (sub?.unsubscribe(), reject(new Error(`run ${runId} did not finish; ${events.length} events`))), timeoutMs);
    const subscribe = () => {
      events = [];
      sub = client.events.subscribe(
        { run_id: runId, after_seq: 0 },
        {
          onData: (t) => {
            events.push(t.data as RunEvent);
            onEvent?.(t.data as RunEvent, events);
          },
          onComplete: () => (clearTimeout(timer), resolve(events)),
          onError: (err) => {
            const notYet = (err as { data?: { code?: string } }).data?.code === "NOT_FOUND" && Date.now() < deadline;
            if (notYet) return void setTimeout(subscribe, 100);
            clearTimeout(timer);
            reject(err);
          },
        },
      );
    };
    subscribe();
  });
}
