/**
 * Re-score: an edited reward function run over a past run's stored trajectories, with no new sampling.
 * The web server sends the run's frozen files with the edits laid over them and the trajectories (task,
 * the scenario's recorded output, messages); the runner's `rescore` compiles and checks the files as
 * `validate` does, runs the reward of each trajectory in its own sandbox with the experiment's limits, and
 * answers one result per trajectory, in order. Written once; the runner's router and the web client use it.
 */
import { z } from "zod";
import { RunKind } from "./config";
import { ChatMessage } from "./chat";
import { ExperimentFiles } from "./experiment/files";
import { Diagnostic, RolloutError } from "./run";
import { SecretName } from "./mcp";

/** Trajectories one re-score call may carry (the web tier caps what it loads at this and says so). */
export const RESCORE_MAX_TRAJECTORIES = 2_000;
/** A re-score's time budget on the runner; trajectories not reached by then come back "not re-scored". */
export const RESCORE_BUDGET_MS = 120_000;

export const RescoreTrajectory = z.object({
  id: z.string().min(1).max(500),
  split: z.enum(["train", "val"]),
  step: z.number().int().min(0),
  group: z.number().int().min(0),
  task: z.unknown().describe("The task row as the rollout got it (before taskSchema defaults)."),
  output: z.unknown().describe("What the scenario returned, as recorded with the trajectory (null when none was recorded)."),
  messages: z.array(ChatMessage),
});
export type RescoreTrajectory = z.infer<typeof RescoreTrajectory>;

export const RescoreRequest = z.object({
  /** The run's workspace: a judge.model naming a checkpoint must be one of its runs (RunSpec.workspace_id). */
  workspace_id: z.string().min(1).max(100),
  files: ExperimentFiles,
  /** The workspace secrets the files' judge needs (RunSpec.secrets). */
  secrets: z.record(SecretName, z.string().max(10_000)).default({}),
  kind: RunKind,
  trajectories: z.array(RescoreTrajectory).max(RESCORE_MAX_TRAJECTORIES),
});
export type RescoreRequest = z.infer<typeof RescoreRequest>;

export const RescoredTrajectory = z.object({
  id: z.string(),
  /** The new reward; null when the reward failed on this trajectory (error set). */
  reward: z.number().nullable(),
  /** The reward's metrics (with a groupReward: its metrics and `independent_reward`, as in a run). */
  metrics: z.record(z.string(), z.number()),
  /** A throw (stack mapped to the user's file:line), a limit, or "not re-scored" when the budget ran out. */
  error: RolloutError.nullable(),
  duration_ms: z.number(),
  /** What the reward logged. */
  logs: z.array(z.string()),
});
export type RescoredTrajectory = z.infer<typeof RescoredTrajectory>;

export const RescoreResponse = z.discriminatedUnion("ok", [
  /** The files did not compile or check: diagnostics exactly as `validate` reports them. */
  z.object({ ok: z.literal(false), error: z.string(), diagnostics: z.array(Diagnostic) }),
  z.object({
    ok: z.literal(true),
    /** reward.ts exports groupReward: training groups were re-scored together, as the loop does. */
    group_reward: z.boolean(),
    /** config.json → trainer.scale_rewards of the checked files (GRPO divides advantages by the std). */
    scale_rewards: z.boolean(),
    /** One per request trajectory, same order. */
    results: z.array(RescoredTrajectory),
    diagnostics: z.array(Diagnostic),
    duration_ms: z.number(),
  }),
]);
export type RescoreResponse = z.infer<typeof RescoreResponse>;
