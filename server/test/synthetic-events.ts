/** Synthetic run events for the delivery tests and the ingest/latency benchmarks (no engine involved). */
import { RunConfig, RunEvent } from "@contracts";
import type { RunEventInput } from "@/gpu-runner/src/events/event-log";

/**
 * A rollout about the size of a short real one (a prompt, a completion, timings); `padChars` makes the
 * completion that long instead (a long rollout: over Postgres NOTIFY's 8,000 bytes, for the adapter tests).
 */
export function syntheticTrajectory(i: number, padChars = 0) {
  return {
    id: `rollout-${i}`,
    step: Math.floor(i / 16),
    group: Math.floor(i / 8) % 2,
    task_index: i % 8,
    split: "train" as const,
    task: { word: `word-${i}` },
    messages: [
      { role: "system" as const, content: "You answer with exactly one word, and nothing else. ".repeat(3) },
      { role: "user" as const, content: `Say the word "word-${i}".` },
      {
        role: "assistant" as const,
        content: padChars > 0 ? `word-${i} `.repeat(Math.ceil(padChars / `word-${i} `.length)) : i % 3 === 0 ? `word-${i}` : `I think the word is word-${i}, right?`,
      },
    ],
    reward: i % 3 === 0 ? 1 : 0.25,
    metrics: { exact: i % 3 === 0 ? 1 : 0 },
    error: null,
    model: "SmolLM2-135M-Instruct",
    tokens: { prompt: 48, completion: 9 },
    timings: { started_at: Date.now(), duration_ms: 120, model_ms: 100 },
    logs: [],
  };
}

/**
 * A train run's events as the runner emits them: run.started, `rollouts` rollouts with a step.finished
 * after every 16, and run.finished. Without run_id/seq/ts: the runner's event log assigns those.
 */
export function syntheticRunEvents(rollouts: number): RunEventInput[] {
  const out: RunEventInput[] = [
    { type: "run.started", payload: { kind: "train", config: RunConfig.parse({}), model: "SmolLM2-135M-Instruct", resumed_from_step: 0 } },
  ];
  for (let i = 1; i <= rollouts; i++) {
    out.push({ type: "rollout.finished", payload: syntheticTrajectory(i) });
    if (i % 16 === 0) {
      const step = i / 16 - 1;
      out.push({
        type: "step.finished",
        payload: {
          step,
          reward_mean: 0.5,
          reward_std_within_group: 0.3,
          exception_rate: 0,
          groups_trainable: 2,
          rollouts: 16,
          rollout_s: 1,
          train_s: 1,
          step_s: 2,
          tokens_per_s: 100,
          judge_tokens: 0,
          judge_cost_usd: 0,
          trainer: null,
        },
      });
    }
  }
  out.push({ type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } });
  return out;
}

/** The same events as stored ones (run_id, seq 1.., ts), validated against the contract. */
export function syntheticStoredEvents(runId: string, rollouts: number, t0 = Date.now()): RunEvent[] {
  return syntheticRunEvents(rollouts).map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: t0 + i }));
}
