/**
 * Runs one rollout of user code in a fresh sandbox: the scenario's default export, then the reward's. The
 * only ways out of the isolate are the bridge's functions (bridge.ts): the model, the judge, MCP servers, log
 * and metric — validated, capped and bounded host-side. Every rollout gets its own isolate in a sandbox
 * process of its own (pool.ts), so one rollout's crash, hang or memory bomb cannot touch another or the runner.
 */
import { z } from "zod";
import type { ChatMessage, LimitsConfig, RolloutError } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import { type BridgeRecord, type RolloutHost, createBridge } from "./bridge";
import { SANDBOX_CAPS } from "./caps";
import { Failure, MetricEntries, anyNumber, classify, stopError, thrown } from "./outcome";
import { SandboxUnavailable } from "./pool";
import type { CpuUse } from "./cpu/cpu-meter";
import type { SandboxPlacement } from "./cpu/share";
import { openSandbox, type RemoteSandbox } from "./remote";
import { RolloutClock } from "./rollout-clock";

export type { RolloutHost } from "./bridge";

export interface RolloutInput {
  compiled: CompiledExperiment;
  task: unknown;
  split: "train" | "val";
  step: number;
  group: number;
  rolloutIndex: number;
  limits: LimitsConfig;
  /** The runner's side of the bridge: sampling (the caller records every turn), judge, MCP. */
  host: RolloutHost;
  /** Names of the experiment's MCP servers (ctx.mcp.servers). */
  mcpServers: readonly string[];
  /** The conversation the caller recorded, handed to the reward function as `messages`. */
  getMessages: () => ChatMessage[];
  signal?: AbortSignal;
  /**
   * The rollout's own clock, which its wall-clock limit counts: the runner's fair queue pauses it while the
   * rollout only waits for an engine slot. Absent: a clock of its own that never pauses.
   */
  clock?: RolloutClock;
  /** Whose CPU share its sandbox computes under: its run's, in its workspace's. */
  placement?: SandboxPlacement;
}

export interface RolloutOutcome {
  /** What the scenario returned (JSON data; null when it returned nothing or failed). */
  output: unknown;
  /** null when the rollout failed (error set). */
  reward: number | null;
  /** ctx.metric values, then the reward's metrics (which win on a name clash). */
  metrics: Record<string, number>;
  /** What the runner recorded itself (judge usage), never overridden by user metrics. */
  record: BridgeRecord;
  logs: string[];
  error: RolloutError | null;
  durationMs: number;
  /** Time it waited for an engine slot with nothing of its own served (not counted by its limit). */
  queuedMs: number;
  /** CPU its sandbox process got and waited for (cpu/cpu-meter.ts); null where not measured. */
  cpu: CpuUse | null;
}

// --- what the entry points return (gpu-runner/sdk/runtime/entry.ts builds these; checked as untrusted data)
const ScenarioResult = z.union([z.object({ ok: z.literal(true), outputJson: z.string() }), Failure]);
export const RewardResult = z.union([
  z.object({
    ok: z.literal(true),
    type: z.string(),
    rewardType: z.string().optional(),
    reward: anyNumber.nullable(),
    metricsType: z.string().optional(),
    metrics: MetricEntries,
  }),
  Failure,
]);
type RewardOk = Extract<z.infer<typeof RewardResult>, { ok: true }>;

const describe = (v: number) => (Number.isNaN(v) ? "NaN" : String(v));

/** Metric entries from the isolate → finite numbers, or a message naming the bad one. */
export function checkMetrics(entries: z.infer<typeof MetricEntries>, maxMetrics: number, who: string): [string, number][] | string {
  if (entries.length > maxMetrics) return `${who} returned more than ${maxMetrics} metrics`;
  const out: [string, number][] = [];
  for (const [name, value, type] of entries) {
    if (name.length === 0 || name.length > SANDBOX_CAPS.maxMetricNameChars) {
      return `${who} returned a metric name of ${name.length} characters; names are 1 to ${SANDBOX_CAPS.maxMetricNameChars} characters`;
    }
    if (value === null || !Number.isFinite(value)) return `${who} returned metrics.${name} = ${value === null ? type : describe(value)}; metrics must be finite numbers`;
    out.push([name, value]);
  }
  return out;
}

export function checkReward(r: RewardOk, maxMetrics: number): { reward: number; metrics: [string, number][] } | string {
  let reward: number;
  if (r.type === "number") reward = r.reward ?? Number.NaN;
  else if (r.type === "object") {
    if (r.rewardType !== "number" || r.reward === null) return `the reward function returned { reward: ${r.rewardType} }; reward must be a finite number`;
    reward = r.reward;
  } else return `the reward function returned ${r.type === "null" ? "null" : `a ${r.type}`}; return a finite number or { reward, metrics }`;
  if (!Number.isFinite(reward)) return `the reward function returned ${describe(reward)}; the reward must be a finite number`;
  if (r.metricsType !== undefined && r.metricsType !== "undefined" && r.metricsType !== "object") {
    return `the reward function returned metrics as ${r.metricsType}; metrics must be an object of finite numbers`;
  }
  const metrics = checkMetrics(r.metrics, maxMetrics, "the reward function");
  return typeof metrics === "string" ? metrics : { reward, metrics };
}

export async function runRollout(input: RolloutInput): Promise<RolloutOutcome> {
  const started = performance.now();
  const { limits, compiled } = input;
  const clock = input.clock ?? new RolloutClock();
  const bridge = createBridge(input.host, limits);
  let output: unknown = null;
  let sandbox: RemoteSandbox | undefined;
  const outcome = (error: RolloutError | null, reward: number | null = null): RolloutOutcome => ({
    output,
    reward: error ? null : reward,
    metrics: bridge.record.metrics,
    record: bridge.record,
    logs: bridge.record.logs,
    error,
    durationMs: Math.round(performance.now() - started),
    queuedMs: Math.round(clock.queuedMs()),
    cpu: sandbox?.cpu() ?? null,
  });
  if (input.signal?.aborted) return outcome(stopError("abort", limits));

  try {
    sandbox = await openSandbox(compiled, limits, bridge, { signal: input.signal, clock, placement: input.placement });
    const taskJson = JSON.stringify(input.task ?? null);
    const scenario = ScenarioResult.parse(
      await sandbox.call("runScenario", [taskJson, input.split, input.step, input.group, input.rolloutIndex, [...input.mcpServers]]),
    );
    // Whatever the scenario left running (un-awaited ctx.chat calls) is cancelled: nothing outlives it.
    bridge.enter("reward");
    if (!scenario.ok) return outcome(thrown(compiled, scenario, "scenario"));
    if (scenario.outputJson.length > limits.max_output_chars) {
      return outcome({ kind: "limit", message: `the scenario's output is ${scenario.outputJson.length} characters of JSON; limits.max_output_chars is ${limits.max_output_chars}` });
    }
    output = JSON.parse(scenario.outputJson) as unknown;

    const reward = RewardResult.parse(await sandbox.call("runReward", [taskJson, JSON.stringify(input.getMessages())]));
    if (!reward.ok) return outcome(thrown(compiled, reward, "reward"));
    const checked = checkReward(reward, SANDBOX_CAPS.maxMetrics);
    if (typeof checked === "string") return outcome({ kind: "reward", message: checked });
    for (const [name, value] of checked.metrics) bridge.record.metrics[name] = value;
    return outcome(null, checked.reward);
  } catch (err) {
    if (err instanceof SandboxUnavailable) throw err; // the runner's failure, not the rollout's: the run fails
    return outcome(classify(err, compiled, limits, clock));
  } finally {
    bridge.enter("closed");
    sandbox?.dispose();
    bridge.release();
  }
}
