/**
 * What the web server hands the runner to start a run (RunSpec), what a finished rollout looks like
 * (Trajectory), and every event in a run's append-only log (RunEvent). Written once; the runner emits
 * these, the web server validates, stores and fans them out, the browser renders them.
 */
import { z } from "zod";
import { RunConfig, RunKind } from "./config";
import { ChatMessage } from "./chat";
import { TrainMetrics, CheckpointInfo, InitFrom } from "./train";
import { ExperimentFiles } from "./experiment/files";
import { McpServerDefinition, McpServerName, SecretName } from "./mcp";

export const RunSpec = z.object({
  run_id: z.string().min(1),
  /**
   * The workspace the run belongs to. The runner records it with the run and refuses any model reference
   * (eval_model, init_from, judge.model, a chat's model) to a run of another workspace: a second check behind
   * the web server's (docs/security.md).
   */
  workspace_id: z.string().min(1).max(100),
  kind: RunKind,
  files: ExperimentFiles,
  /**
   * The workspace secrets the run refers to (judge.api_key_secret, `${NAME}` in MCP headers and in the env of
   * its registered servers), by name. Held in the runner's memory for the run, injected only into the request
   * that needs each, and masked in every event and log line; never written to disk.
   */
  secrets: z.record(SecretName, z.string().max(10_000)).default({}),
  /** The registered stdio MCP servers the run's config names (mcp.servers.<x>.server), by registered name. */
  mcp_servers: z.record(McpServerName, McpServerDefinition).default({}),
  /** Eval runs: which checkpoint to evaluate, `<run>@<step>`; absent = the base model. */
  eval_model: z.string().optional(),
  /** Resume a train run from its newest checkpoint instead of refusing an existing run id. */
  resume: z.boolean().default(false),
  /**
   * Which attempt of the run this is: 1 when it is first started, N+1 for each resume or move. The runner
   * tags every event of the attempt with it, so the web server never lets an older attempt's events (its
   * run.finished arriving late) change the state of a newer one (features/run-lifecycle/server/lifecycle).
   */
  attempt: z.number().int().min(1).default(1),
  /**
   * Resume: the highest seq of this run the web server has stored. The runner never numbers an event at or
   * below it (ingestion would drop it as a duplicate): it refuses the resume when its own log ends earlier
   * (lines lost in a crash, a wiped runs folder) until the web server hands its copy back.
   */
  last_seq: z.number().int().min(0).optional(),
  /**
   * Train runs forked from a checkpoint: the first step samples from `<run_id>@<step>` and trains on from
   * its adapter (see InitFrom). The runner refuses it when the engine does not have that checkpoint.
   */
  init_from: InitFrom.optional(),
});
export type RunSpec = z.infer<typeof RunSpec>;

/**
 * The header the web server sets on the runner's plain-HTTP chat route: the workspace the request acts in.
 * The runner serves a checkpoint model only to its run's workspace (a second check behind the web's).
 */
export const RUNNER_WORKSPACE_HEADER = "x-rollbook-workspace";

/**
 * `lost` is the web server's verdict, never the runner's: the run's runner has not answered (status call
 * failing, event stream down) for RUNNER_LOST_AFTER_MS. It is not terminal: the run goes back to `running`
 * when the runner answers and still has it, and ends `failed` when the runner comes back without it.
 */
export const RunStatus = z.enum(["queued", "running", "lost", "completed", "failed", "stopped"]);
export type RunStatus = z.infer<typeof RunStatus>;

/** Statuses of a run that has not ended: Stop applies, ingestion follows it. */
export const ACTIVE_RUN_STATUSES = ["queued", "running", "lost"] as const satisfies readonly RunStatus[];
export const TERMINAL_RUN_STATUSES = ["completed", "failed", "stopped"] as const satisfies readonly RunStatus[];
export type ActiveRunStatus = (typeof ACTIVE_RUN_STATUSES)[number];
export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number];
export const isTerminalStatus = (s: string | null | undefined): s is TerminalRunStatus =>
  s === "completed" || s === "failed" || s === "stopped";
export const isActiveStatus = (s: string | null | undefined): s is ActiveRunStatus => s === "queued" || s === "running" || s === "lost";

/** A diagnostic with a 1-based position in one of the experiment's files. */
export const Diagnostic = z.object({
  file: z.string(),
  line: z.number().int().min(1),
  column: z.number().int().min(1),
  message: z.string(),
  severity: z.enum(["error", "warning"]).default("error"),
});
export type Diagnostic = z.infer<typeof Diagnostic>;

/** Every kind of rollout error, in the order the run page's filter lists them. */
export const ROLLOUT_ERROR_KINDS = ["thrown", "timeout", "starved", "memory", "reward", "model", "mcp", "limit", "engine_connection"] as const;

/**
 * The kinds that are the runner's failure, not the experiment's: the run page counts them apart from the
 * rollouts the user's code (or its model, MCP servers, limits) failed, and does not call a run that only
 * lost rollouts to them "completed with warnings".
 */
export const RUNNER_FAULT_ERROR_KINDS = ["starved", "engine_connection"] as const satisfies readonly (typeof ROLLOUT_ERROR_KINDS)[number][];
export const isRunnerFault = (kind: string | null | undefined): boolean => (RUNNER_FAULT_ERROR_KINDS as readonly string[]).includes(kind ?? "");

export const RolloutError = z.object({
  /** thrown: user code threw; timeout: wall clock or CPU limit; starved: the wall clock ran out while the
   * runner's CPUs were busy (the rollout, or the engine serving it, waited for a CPU a quarter or more of
   * its time: the runner's load, not its code); memory: heap limit; reward: the reward function returned
   * NaN / a non-number or threw; model: the engine failed the call; mcp: an MCP server was unavailable or
   * failed; limit: a sandbox cap was exceeded (calls in flight, prompt size, context); engine_connection: the
   * runner's connection to its engine was cut (reset, closed) while the engine kept running, and the model
   * call sent again was cut too — the runner's failure, not the experiment's. */
  kind: z.enum(ROLLOUT_ERROR_KINDS),
  message: z.string(),
  stack: z.string().optional(),
});
export type RolloutError = z.infer<typeof RolloutError>;

export const TrajectoryTurn = z.object({
  /** Index in `messages` of the assistant reply this call sampled. */
  message_index: z.number().int().min(0),
  /** null: not known — the prompt was never tokenised by Rollbook (an ART client's logged reply, features/art). */
  prompt_tokens: z.number().int().min(0).nullable(),
  completion_tokens: z.number().int().min(0),
  /** null: not measured (a reply an ART client sampled and logged: Rollbook did not time it). */
  model_ms: z.number().min(0).nullable(),
  finish_reason: z.string().nullable().optional(),
});
export type TrajectoryTurn = z.infer<typeof TrajectoryTurn>;

export const Trajectory = z.object({
  id: z.string(),
  step: z.number().int().min(0),
  group: z.number().int().min(0),
  /** Index of the task within its split. */
  task_index: z.number().int().min(0),
  split: z.enum(["train", "val"]),
  task: z.unknown(),
  /** The whole conversation: every prompt message and every sampled reply, in order. */
  messages: z.array(ChatMessage),
  /** null when the rollout failed (error set). */
  reward: z.number().nullable(),
  metrics: z.record(z.string(), z.number()).default({}),
  error: RolloutError.nullable(),
  /** The model that sampled it: base id or `<run>@<step>`. */
  model: z.string(),
  /**
   * prompt null: not known (an ART client's logged rollout: Rollbook never tokenised its prompt, and a count of
   * 0 would be false). Absent is not zero: views show "—".
   */
  tokens: z.object({ prompt: z.number().int().nullable(), completion: z.number().int() }),
  timings: z.object({
    started_at: z.number(),
    /** null: not measured (an ART client's rollout, unless it logged a `duration` metric). */
    duration_ms: z.number().nullable(),
    /** null: not measured (an ART client's rollout: its model calls were not timed by Rollbook). */
    model_ms: z.number().nullable(),
    /**
     * Time the rollout spent waiting for a slot on the shared engine with nothing of its own being served;
     * not counted against limits.rollout_timeout_ms. Absent on rollouts recorded before it was measured.
     */
    queued_ms: z.number().optional(),
    /**
     * CPU time its sandbox process got, and the time that process was runnable but waited for a CPU (the
     * kernel's schedstat: a busy runner, or its workspace's share used up by its other rollouts). Absent
     * where the runner cannot read them (not Linux) and on rollouts recorded before they were measured.
     */
    cpu_ms: z.number().optional(),
    cpu_wait_ms: z.number().optional(),
  }),
  /** What the user's scenario logged with ctx.log, as plain text lines. */
  logs: z.array(z.string()).default([]),
  /**
   * What the scenario returned (the reward's `output`), kept so a re-score can run an edited reward over
   * it. Absent for rollouts recorded before outputs were kept, and for outputs over MAX_RECORDED_OUTPUT_CHARS.
   */
  output: z.unknown().optional(),
  /**
   * One entry per model call, in order: which transcript message it sampled, its token counts and how long
   * the engine took. Optional: rollouts recorded before per-turn figures were kept have none.
   */
  turns: z.array(TrajectoryTurn).optional(),
});
export type Trajectory = z.infer<typeof Trajectory>;

/** The largest scenario output (as JSON characters) kept with a trajectory; bigger ones are left out. */
export const MAX_RECORDED_OUTPUT_CHARS = 100_000;

export const StepMetrics = z.object({
  step: z.number().int().min(0),
  reward_mean: z.number().nullable(),
  reward_std_within_group: z.number().nullable(),
  exception_rate: z.number(),
  groups_trainable: z.number().int(),
  rollouts: z.number().int(),
  /** The step's times; null where not measured (an ART client's logged step: it sampled and trained elsewhere). */
  rollout_s: z.number().nullable(),
  train_s: z.number().nullable(),
  step_s: z.number().nullable(),
  /** Completion tokens per second of rollout time; null when the rollout time is not known (null or 0). */
  tokens_per_s: z.number().nullable(),
  /** What judges cost this step (sums over its rollouts); a run's total is the sum over its steps and evals. */
  judge_tokens: z.number().default(0),
  judge_cost_usd: z.number().default(0),
  trainer: TrainMetrics.nullable(),
});
export type StepMetrics = z.infer<typeof StepMetrics>;

export const EvalMetrics = z.object({
  step: z.number().int().min(0),
  model: z.string(),
  reward_mean: z.number().nullable(),
  reward_std: z.number().nullable(),
  exception_rate: z.number(),
  rollouts: z.number().int(),
  judge_tokens: z.number().default(0),
  judge_cost_usd: z.number().default(0),
});
export type EvalMetrics = z.infer<typeof EvalMetrics>;

const ev = <T extends string, P extends z.ZodTypeAny>(type: T, payload: P) =>
  z.object({
    run_id: z.string(),
    seq: z.number().int().min(1),
    ts: z.number(),
    /** The attempt that appended it (RunSpec.attempt); absent in logs written before attempts: attempt 1. */
    attempt: z.number().int().min(1).optional(),
    type: z.literal(type),
    payload,
  });

/** The attempt an event belongs to (events from before attempts were tagged belong to the first). */
export const eventAttempt = (e: { attempt?: number }): number => e.attempt ?? 1;

export const RunEvent = z.discriminatedUnion("type", [
  ev(
    "run.started",
    z.object({
      kind: RunKind,
      config: RunConfig,
      model: z.string(),
      resumed_from_step: z.number().int(),
      /** A forked train run: the checkpoint its adapter started from. */
      init_from: InitFrom.optional(),
    }),
  ),
  ev("run.log", z.object({ level: z.enum(["info", "warn", "error"]), message: z.string() })),
  ev("rollout.finished", Trajectory),
  ev("step.finished", StepMetrics),
  // `loss` is the micro-batch's own loss, progress only: the step's loss is step.finished's trainer.loss
  // (contracts/signals.ts), which is what every page shows under "loss".
  ev("train.progress", z.object({ step: z.number().int(), micro_batch: z.number().int(), micro_batches: z.number().int(), loss: z.number() })),
  ev("checkpoint.saved", CheckpointInfo),
  ev("eval.finished", EvalMetrics),
  ev("run.finished", z.object({ status: z.enum(["completed", "failed", "stopped"]), error: z.string().nullable(), diagnostics: z.array(Diagnostic).default([]) })),
]);
export type RunEvent = z.infer<typeof RunEvent>;
export type RunEventType = RunEvent["type"];
export type RunEventOf<T extends RunEventType> = Extract<RunEvent, { type: T }>;

/**
 * Where the runner keeps a checkpoint (a path on its disk) is the operator's business (docs/security.md): the
 * web server serves checkpoint.saved without it, on every way out (socket rooms, runs.events, the run events
 * route; see CHECKPOINT_PATH_KEY). A checkpoint is named `<run>@<step>` and downloaded through the web server.
 */
export type ServedCheckpoint = Omit<CheckpointInfo, "path">;
/** An event as the web server serves it to browsers and API clients. */
export type ServedRunEvent = Exclude<RunEvent, { type: "checkpoint.saved" }> | (Omit<RunEventOf<"checkpoint.saved">, "payload"> & { payload: ServedCheckpoint });
/** The payload key left out of a served checkpoint.saved (the run events route drops it in SQL). */
export const CHECKPOINT_PATH_KEY = "path";

export function servedEvent(e: RunEvent): ServedRunEvent {
  if (e.type !== "checkpoint.saved") return e;
  const { [CHECKPOINT_PATH_KEY]: _onTheRunnersDisk, ...payload } = e.payload;
  return { ...e, payload };
}

/** Runner → web answer to start(spec): either accepted, or refused before it started, with diagnostics. */
export const StartResult = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), run_id: z.string() }),
  z.object({
    ok: z.literal(false),
    error: z.string(),
    diagnostics: z.array(Diagnostic),
    runner_unavailable: z
      .boolean()
      .optional()
      .describe("The refusal is about this runner (its disk is full, its engine failed), not the run: the web server puts the run back in the queue for another runner instead of failing it."),
  }),
]);
export type StartResult = z.infer<typeof StartResult>;

/**
 * How a runner shares its CPUs between workspaces: cgroup weights (v2 cpu.weight, v1 cpu.shares), the
 * niceness fallback, or nothing (docs/security.md, "Fair share").
 */
export const CpuShareMode = z.enum(["cgroup-v2", "cgroup-v1", "nice", "off"]);
export type CpuShareMode = z.infer<typeof CpuShareMode>;

/**
 * Advice a runner gives its operator about its own setup, e.g. `slow_sampling`: it has a GPU but samples with
 * the transformers backend (no vLLM). Fixed text the runner writes from its engine's health: no address, no
 * secret, nothing of any workspace. Shown as text on the Runners page (never as HTML).
 */
export const RunnerNotice = z.object({
  // A string, not an enum: a web server still parses the status of a newer runner that knows more kinds.
  kind: z.string().min(1).max(100).describe('Stable id of the notice, e.g. "slow_sampling".'),
  message: z.string().min(1).max(2_000).describe("What is wrong and how to fix it, for the runner's operator."),
});
export type RunnerNotice = z.infer<typeof RunnerNotice>;

export const RunnerStatus = z.object({
  runner: z.string(),
  engine: z.object({
    state: z.enum(["starting", "ready", "restarting", "failed"]),
    restarts: z.number().int(),
    health: z.unknown().nullable(),
    last_restart: z
      .object({ at: z.number().describe("ms since the epoch"), reason: z.string() })
      .nullable()
      .optional()
      .describe('Why the runner last restarted its engine, e.g. "engine killed by SIGKILL, likely out of memory — RSS was 3.1 GB at the last health check (…); last output: …".'),
  }),
  runs: z.array(
    z.object({
      run_id: z.string(),
      status: RunStatus,
      last_seq: z.number().int(),
      step: z.number().int(),
      /** The attempt its log is at (the last run.started's); absent from older runners. */
      attempt: z.number().int().min(1).optional(),
      error: z
        .string()
        .nullable()
        .optional()
        .describe(
          "Why a failed run failed. Also reported when its run.finished could not be written (disk full): the web server records it " +
            "from here when its stored log already holds everything the runner's does.",
        ),
    }),
  ),
  // Optional so that a web server still parses an older runner's status (the pool then treats it as unknown).
  device: z.string().nullable().optional().describe('Where the engine computes, e.g. "cpu" or "cuda: NVIDIA H100"; null while the engine has not said.'),
  models: z.array(z.string()).optional().describe("Base models this runner's engine serves (config.json \"model\" must be one of them)."),
  capacity: z.number().int().min(1).optional().describe("How many runs this runner takes at once (RUNNER_CAPACITY); the web server's dispatcher never sends more."),
  engine_queue: z
    .object({ capacity: z.number().int(), in_flight: z.number().int(), waiting: z.number().int() })
    .optional()
    .describe("The runner's fair queue in front of the engine: its slots (the engine's batch capacity), model calls on the engine, calls waiting for a slot. Shown to workspace admins only (it counts every workspace's calls)."),
  disk_error: z
    .string()
    .nullable()
    .optional()
    .describe('Why this runner cannot write to its runs folder now, e.g. "disk full on runner gpu-1: …"; null when it can. While set, start refuses new runs.'),
  cpu_share: z
    .object({ mode: CpuShareMode, reason: z.string().optional() })
    .optional()
    .describe("How the runner shares its CPUs between workspaces (RUNNER_CPU_SHARE), and why not with cgroups when it falls back."),
  notices: z
    .array(RunnerNotice)
    .max(20)
    .optional()
    .describe("Advice about the runner's setup (engine/backend-notice.ts), e.g. slow_sampling: a GPU but no vLLM. Absent from older runners: none."),
});
export type RunnerStatus = z.infer<typeof RunnerStatus>;
