/**
 * The experiment the fairness bench (bench/fairness.ts) and its test (server/security/fairness.servertest.ts)
 * run on a real runner and engine: normal rollouts that ask the model once, and — on a task marked `loop` —
 * a hostile one that calls ctx.chat in tight loops (as many at once as limits.max_inflight_calls allows)
 * until its limit stops it; and — on a task marked `spin` — a CPU-bound one (`for (;;) await null`: no model
 * call, a continuation after another, never done) that only its CPU or wall-clock limit ends. One place, so the
 * bench measures what the test checks.
 */
import type { ExperimentFiles, RunEvent, Trajectory } from "../contracts";
import type { RunnerClient } from "../gpu-runner/src/client";

const SCENARIO = `import type { RolloutContext } from "rollbook";
import { z } from "zod";
export const taskSchema = z.object({ word: z.string(), loop: z.boolean().optional(), loop_tokens: z.number().optional(), loops: z.number().optional(), spin: z.boolean().optional() });
export default async function rollout(ctx: RolloutContext<z.infer<typeof taskSchema>>) {
  // The CPU-bound neighbour: every await yields to a continuation of its own, so it never stops computing.
  if (ctx.task.spin) for (;;) await null;
  if (ctx.task.loop) {
    // The hostile neighbour: tight ctx.chat loops, never done; only its limit (or the run's stop) ends it.
    const spin = async () => {
      for (;;) await ctx.chat([{ role: "user", content: "Count from 1 to 1000, one number per line." }], { max_tokens: ctx.task.loop_tokens ?? 64, temperature: 0 });
    };
    await Promise.all(Array.from({ length: ctx.task.loops ?? 4 }, spin));
  }
  const reply = await ctx.chat([{ role: "user", content: "Say the word " + JSON.stringify(ctx.task.word) + "." }]);
  return reply.content;
}
`;

const REWARD = `export default function reward({ output }: { output: unknown }) { return typeof output === "string" && output.length > 0 ? 1 : 0; }\n`;

export const WORDS = ["apple", "river", "candle", "orbit", "maple", "harbor"];

export interface FairnessRun {
  /** Normal rollouts (tasks with a word): one each. */
  words: readonly string[];
  /** Add a looping rollout to this run (a sibling of the normal ones). */
  looper?: { tokens: number; loops: number };
  /** Add this many CPU-bound rollouts (`for (;;) await null`) to the run. */
  spinners?: number;
  rolloutTimeoutMs: number;
  /** limits.cpu_timeout_ms (default 10 000). */
  cpuTimeoutMs?: number;
  /** max_concurrency (default 64). */
  concurrency?: number;
  /** max_tokens of a normal rollout's one call (greedy: the same tokens alone and beside the looper). */
  maxTokens: number;
}

export function fairnessFiles(run: FairnessRun): ExperimentFiles {
  const tasks: Record<string, unknown>[] = run.words.map((word) => ({ word }));
  if (run.looper) tasks.unshift({ word: "loop", loop: true, loop_tokens: run.looper.tokens, loops: run.looper.loops });
  for (let i = 0; i < (run.spinners ?? 0); i++) tasks.unshift({ word: "spin", spin: true });
  const config = {
    groups_per_step: tasks.length,
    rollouts_per_group: 1,
    max_concurrency: run.concurrency ?? 64,
    sampling: { temperature: 0, max_tokens: run.maxTokens },
    limits: { rollout_timeout_ms: run.rolloutTimeoutMs, cpu_timeout_ms: run.cpuTimeoutMs ?? 10_000 },
  };
  return {
    "scenario.ts": SCENARIO,
    "reward.ts": REWARD,
    "tasks.jsonl": tasks.map((t) => JSON.stringify(t)).join("\n") + "\n",
    "config.json": JSON.stringify(config, null, 2),
  };
}

/**
 * Starts a dry run (in workspace `workspace`, default "ws-fairness") and resolves with its events once the
 * runner ends the stream (after run.finished).
 */
export async function dryRun(client: RunnerClient, runId: string, files: ExperimentFiles, timeoutMs = 600_000, workspace = "ws-fairness"): Promise<RunEvent[]> {
  const started = await client.start.mutate({ run_id: runId, workspace_id: workspace, kind: "dry-run", files, resume: false });
  if (!started.ok) throw new Error(`${runId} refused: ${JSON.stringify(started)}`);
  return new Promise<RunEvent[]>((resolve, reject) => {
    const events: RunEvent[] = [];
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new Error(`events of ${runId} did not end within ${timeoutMs} ms; got ${events.length}`));
    }, timeoutMs);
    const sub = client.events.subscribe(
      { run_id: runId, after_seq: 0 },
      {
        onData: (tracked) => events.push(tracked.data as RunEvent),
        onComplete: () => {
          clearTimeout(timer);
          resolve(events);
        },
        onError: (err) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      },
    );
  });
}

export const trajectories = (events: readonly RunEvent[]): Trajectory[] => events.flatMap((e) => (e.type === "rollout.finished" ? [e.payload] : []));

/** The word a normal rollout's task named ("loop" for the looper). */
export const wordOf = (t: Trajectory): string => String((t.task as { word?: unknown } | null)?.word ?? "");
