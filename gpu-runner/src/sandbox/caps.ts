/**
 * The sandbox's fixed caps: what no config can raise, because each one protects the runner or the event
 * log rather than the experiment. (The per-run limits are `config.json → limits`, LimitsConfig.) They are
 * enforced twice: inside the isolate by the glue (so a flood never even crosses the boundary) and again on
 * the runner's side of the bridge (the authority). No imports: the sandbox process bundles this file too.
 */
export const SANDBOX_CAPS = {
  /** ctx.log lines kept per rollout; later lines are dropped (one line says so). */
  maxLogLines: 200,
  /** Characters kept of one log line. */
  maxLogLineChars: 2_000,
  /** Distinct ctx.metric names per rollout, and metrics a reward may return. */
  maxMetrics: 64,
  /** Characters of a metric name (ctx.metric, or a key of a reward's metrics). */
  maxMetricNameChars: 100,
  /** Calls waiting for a slot once limits.max_inflight_calls are in flight; more are refused at once. */
  maxQueuedCalls: 64,
  /** Model, judge and MCP calls one rollout may make in all (refused ones included): a loop that keeps
   * calling a refusing bridge would otherwise cost the runner work until the wall clock ends it. */
  maxHostCalls: 10_000,
  /** Characters kept of an error message and of a stack trace in a rollout's error. */
  maxErrorMessageChars: 4_000,
  maxStackChars: 16_000,
} as const;

/** `text`, or its first `max` characters and a note of how many were cut. */
export function capText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
