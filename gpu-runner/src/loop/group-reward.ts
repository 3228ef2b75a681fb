/**
 * Applies reward.ts's groupReward to one finished group (RULER-style relative judging): the rollouts that
 * got a reward are scored together; each keeps its own reward as the metric `independent_reward` and
 * takes the group's, and its training sample is rebuilt with it. The judge's tokens and cost are shared
 * out evenly over the group. If the group reward fails, those rollouts fail with its error (kind "reward")
 * and leave training, rather than training on rewards the experiment did not mean.
 */
import type { RunConfig } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import type { TaskRow } from "../experiment/tasks";
import type { ExecutedRollout, RolloutServices } from "../rollout/execute";
import type { SandboxPlacement } from "../sandbox/cpu/share";
import { runGroupReward } from "../sandbox/run-group";

export interface GroupRewardJob {
  compiled: CompiledExperiment;
  config: RunConfig;
  services: RolloutServices;
  task: TaskRow;
  /** The whole group, in rollout order; updated in place. */
  rollouts: ExecutedRollout[];
  signal: AbortSignal;
  /** Whose CPU share the group reward computes under (the run's). */
  placement?: SandboxPlacement;
}

export async function applyGroupReward(job: GroupRewardJob): Promise<void> {
  const scored = job.rollouts.filter((r) => r.trajectory.error === null && r.trajectory.reward !== null);
  if (scored.length === 0) return;
  const { services, signal } = job;
  const outcome = await runGroupReward({
    compiled: job.compiled,
    task: job.task.data,
    rollouts: scored.map((r) => ({ output: r.output, messages: r.trajectory.messages, reward: r.trajectory.reward as number, metrics: r.trajectory.metrics })),
    limits: job.config.limits,
    host: {
      chat: () => Promise.reject(new Error("ctx.chat is not available in groupReward")),
      judge: (messages, options, gate) => services.judge.chat(messages, options, AbortSignal.any([gate, signal])),
      mcpList: () => services.mcp.list(),
      mcpCall: (server, tool, args, gate) => services.mcp.call(server, tool, args, AbortSignal.any([gate, signal])),
    },
    signal,
    placement: job.placement,
  });
  const n = scored.length;
  const judge = outcome.record.judge;
  scored.forEach((r, i) => {
    const t = r.trajectory;
    const logs = outcome.logs.map((line) => `groupReward: ${line}`);
    t.logs = [...t.logs, ...logs];
    if (judge.calls > 0) {
      t.metrics.judge_tokens = (t.metrics.judge_tokens ?? 0) + (judge.prompt_tokens + judge.completion_tokens) / n;
      t.metrics.judge_cost_usd = (t.metrics.judge_cost_usd ?? 0) + judge.cost_usd / n;
    }
    if (outcome.error || !outcome.rewards) {
      t.error = { ...(outcome.error ?? { kind: "reward" as const, message: "groupReward gave no rewards" }), message: `groupReward failed: ${outcome.error?.message ?? "no rewards"}` };
      t.reward = null;
      r.sample = null;
      return;
    }
    const reward = outcome.rewards[i] as number;
    t.metrics = { ...t.metrics, ...(outcome.metrics[i] ?? {}), independent_reward: t.reward as number };
    t.reward = reward;
    if (r.sample) r.sample = { ...r.sample, reward };
  });
}
