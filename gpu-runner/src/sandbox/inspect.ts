/**
 * Looks inside a compiled experiment before a run starts, in a sandbox like any rollout: which entry points
 * it exports (scenario and reward defaults, a groupReward, a taskSchema) and whether every task row fits
 * the scenario's `taskSchema` (zod) — the errors name the row and the field, so a bad row in 10,000 is
 * found before a single rollout runs.
 */
import { z } from "zod";
import type { LimitsConfig, RolloutError } from "../../../contracts";
import type { CompiledExperiment } from "../experiment/compile";
import { type RolloutHost, createBridge } from "./bridge";
import { Failure, classify, errorText, userStack } from "./outcome";
import { SandboxUnavailable } from "./pool";
import type { SandboxPlacement } from "./cpu/share";
import { openSandbox, type RemoteSandbox } from "./remote";

const Described = z.object({
  scenario: z.boolean(),
  reward: z.boolean(),
  groupReward: z.boolean(),
  taskSchema: z.enum(["none", "zod", "invalid"]),
});
export type ExperimentExports = z.infer<typeof Described>;

const Checked = z.union([
  z.object({
    ok: z.literal(true),
    failed: z.number().int(),
    errors: z.array(z.object({ row: z.number().int(), path: z.string(), message: z.string() })),
  }),
  Failure,
]);

export interface TaskRowError {
  /** Index into the rows given. */
  row: number;
  /** The field (dotted path) of the first issue, "" for the row itself. */
  path: string;
  message: string;
}

export type InspectResult =
  | { ok: true; exports: ExperimentExports; taskErrors: TaskRowError[]; failedRows: number }
  | { ok: false; error: RolloutError };

/** No model, no judge, no MCP while inspecting: module top-level code gets a bridge that refuses them. */
const NO_HOST: RolloutHost = {
  chat: () => Promise.reject(new Error("ctx.chat is not available while the experiment is being checked")),
  judge: () => Promise.reject(new Error("judgeChat is not available at module top level")),
  mcpList: () => Promise.resolve([]),
  mcpCall: () => Promise.reject(new Error("MCP is not available at module top level")),
};

export async function inspectExperiment(
  compiled: CompiledExperiment,
  rows: readonly unknown[],
  runLimits: LimitsConfig,
  /** Whose CPU share the check computes under: the run's at its start (absent: a check outside any run). */
  placement?: SandboxPlacement,
): Promise<InspectResult> {
  // Room for the whole task file (up to the 8 MB experiment cap) inside the isolate at once, and time to
  // check every row. Only the task check gets the extra CPU time: loading the modules and describing them
  // run under the run's own limit, so a module that loops at top level costs no more here than in a rollout.
  const limits: LimitsConfig = {
    ...runLimits,
    memory_mb: Math.max(runLimits.memory_mb, 512),
    rollout_timeout_ms: Math.max(runLimits.rollout_timeout_ms, 60_000),
  };
  const taskCheckLimits: LimitsConfig = { ...limits, cpu_timeout_ms: Math.max(runLimits.cpu_timeout_ms, 30_000) };
  const bridge = createBridge(NO_HOST, limits, "closed");
  let sandbox: RemoteSandbox | undefined;
  let checkingTasks = false;
  try {
    sandbox = await openSandbox(compiled, limits, bridge, { placement });
    const exports = Described.parse(await sandbox.call("describe", []));
    if (exports.taskSchema !== "zod") return { ok: true, exports, taskErrors: [], failedRows: 0 };
    checkingTasks = true;
    const checked = Checked.parse(await sandbox.call("checkTasks", [JSON.stringify(rows)], taskCheckLimits.cpu_timeout_ms));
    if (!checked.ok) {
      const stack = userStack(compiled, checked.stack);
      return { ok: false, error: { kind: "thrown", message: `checking the tasks against taskSchema failed: ${errorText(checked.name, checked.message)}`, ...(stack ? { stack } : {}) } };
    }
    return { ok: true, exports, taskErrors: checked.errors, failedRows: checked.failed };
  } catch (err) {
    if (err instanceof SandboxUnavailable) throw err;
    return { ok: false, error: classify(err, compiled, checkingTasks ? taskCheckLimits : limits) };
  } finally {
    sandbox?.dispose();
    bridge.release();
  }
}
