/**
 * Runs reward.ts's `groupReward` over one group's finished rollouts, in its own sandbox (like a rollout:
 * limits, bridge with the judge and MCP but not the policy). Its rewards replace the rollouts' own; the
 * runner keeps the earlier ones as the metric `independent_reward`.
 */
import { z } from "zod";
import type { ChatMessage, LimitsConfig, RolloutError } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import { type BridgeRecord, type RolloutHost, createBridge } from "./bridge";
import { SANDBOX_CAPS } from "./caps";
import { Failure, MetricEntries, anyNumber, classify, thrown } from "./outcome";
import { SandboxUnavailable } from "./pool";
import type { SandboxPlacement } from "./cpu/share";
import { openSandbox, type RemoteSandbox } from "./remote";
import { checkMetrics } from "./run-rollout";

export interface GroupRolloutInput {
  output: unknown;
  messages: ChatMessage[];
  reward: number;
  metrics: Record<string, number>;
}

export interface GroupRewardInput {
  compiled: CompiledExperiment;
  task: unknown;
  rollouts: GroupRolloutInput[];
  limits: LimitsConfig;
  host: RolloutHost;
  signal?: AbortSignal;
  /** Whose CPU share its sandbox computes under (the run's). */
  placement?: SandboxPlacement;
}

export interface GroupRewardOutcome {
  /** One reward per rollout, in order; null when the group reward failed (error set). */
  rewards: number[] | null;
  metrics: Record<string, number>[];
  /** Judge usage of the whole group, counted host-side. */
  record: BridgeRecord;
  logs: string[];
  error: RolloutError | null;
}

const GroupResult = z.union([
  z.object({
    ok: z.literal(true),
    shape: z.string(),
    rewards: z.array(z.tuple([anyNumber.nullable(), z.string()])),
    metrics: z.array(MetricEntries),
  }),
  Failure,
]);

export async function runGroupReward(input: GroupRewardInput): Promise<GroupRewardOutcome> {
  const { compiled, limits } = input;
  const n = input.rollouts.length;
  const bridge = createBridge(input.host, limits, "reward");
  const done = (error: RolloutError | null, rewards: number[] | null = null, metrics: Record<string, number>[] = []): GroupRewardOutcome => ({
    rewards: error ? null : rewards,
    metrics,
    record: bridge.record,
    logs: bridge.record.logs,
    error,
  });
  let sandbox: RemoteSandbox | undefined;
  try {
    sandbox = await openSandbox(compiled, limits, bridge, { signal: input.signal, placement: input.placement });
    const r = GroupResult.parse(await sandbox.call("runGroupReward", [JSON.stringify({ task: input.task, rollouts: input.rollouts })]));
    if (!r.ok) return done(thrown(compiled, r, "reward"));
    if (r.shape !== "rewards") {
      return done({ kind: "reward", message: `groupReward returned ${r.shape}; return one number per rollout, or { rewards, metrics }` });
    }
    if (r.rewards.length > n) return done({ kind: "reward", message: `groupReward returned more rewards than the group has rollouts (${n})` });
    if (r.rewards.length < n) return done({ kind: "reward", message: `groupReward returned ${r.rewards.length} rewards for a group of ${n} rollouts` });
    const rewards: number[] = [];
    for (const [i, [value, type]] of r.rewards.entries()) {
      if (value === null || !Number.isFinite(value)) {
        return done({ kind: "reward", message: `groupReward returned ${value === null ? `a ${type}` : String(value)} for rollout ${i}; rewards must be finite numbers` });
      }
      rewards.push(value);
    }
    const metrics: Record<string, number>[] = [];
    for (const entries of r.metrics) {
      const checked = checkMetrics(entries, SANDBOX_CAPS.maxMetrics, "groupReward");
      if (typeof checked === "string") return done({ kind: "reward", message: checked });
      metrics.push(Object.fromEntries(checked));
    }
    return done(null, rewards, metrics);
  } catch (err) {
    if (err instanceof SandboxUnavailable) throw err;
    return done(classify(err, compiled, limits));
  } finally {
    bridge.enter("closed");
    sandbox?.dispose();
    bridge.release();
  }
}
