import { z } from "zod";
import { RunKind } from "@contracts";
import { createTRPCRouter, viewerProcedure, memberProcedure } from "@/server/trpc";
import { getRun, listEvents, listRuns, listTrajectories } from "./run-reads";
import { startRun } from "./run-start";
import { stopRun } from "./run-stop";
import { resumeRun } from "@/features/run-lifecycle/server";
import { RescoreRunInput, rescoreRun } from "@/features/rescore/server";
import { openFork, runLineage } from "./run-fork";
import { runsFacets, updateRun } from "./runs-table";
import { RunsListInput, RunUpdateInput } from "../runs-table-query";
import { getRolloutTokens } from "@/features/token-view/server";
import { BaseVersion, FilesInput } from "@/features/experiments/schema";
import { RunSeriesInput, runSeries } from "@/features/metrics/server";

export const runsRouter = createTRPCRouter({
  start: memberProcedure
    .input(
      z.object({
        experimentId: z.string().min(1),
        files: FilesInput,
        kind: RunKind,
        evalModel: z.string().min(1).max(300).optional(),
        /** Fork (from a checkpoint step) or re-run (no step) of a run: recorded as the new run's parent. */
        fork: z
          .object({
            parentRunId: z.string().min(1).max(100),
            parentStep: z.number().int().min(0).optional(),
            loadOptimizer: z.boolean().optional(),
          })
          .optional(),
        /** The version the editor loaded (stale-tab check, as experiments.save). */
        baseVersion: BaseVersion,
      }),
    )
    .mutation(({ ctx, input }) =>
      startRun(ctx.db, ctx.workspaceId, ctx.getRunner, input, { createdById: ctx.user.id, runnerById: ctx.runnerById }),
    ),

  /** Open a run (or one of its checkpoints) in the editor as the starting point of a fork or re-run. */
  fork: memberProcedure
    .input(z.object({ runId: z.string().min(1).max(100), step: z.number().int().min(0).optional() }))
    .mutation(({ ctx, input }) => openFork(ctx.db, ctx.workspaceId, input, ctx.user.id)),

  /** The run's parent (when forked) and the runs forked from it. */
  lineage: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => runLineage(ctx.db, ctx.workspaceId, input.id)),

  /** The runs table: filters, sort (any summary metric), search and cursor (features/runs/server/runs-table.ts). */
  list: viewerProcedure
    .input(RunsListInput.optional())
    .query(({ ctx, input }) => listRuns(ctx.db, ctx.workspaceId, input ?? {})),

  /** What the runs table's filter bar offers: base models, tags, authors, summary metric names. */
  facets: viewerProcedure.query(({ ctx }) => runsFacets(ctx.db, ctx.workspaceId)),

  /** Edit a run's tags and notes. */
  update: memberProcedure.input(RunUpdateInput).mutation(({ ctx, input }) => updateRun(ctx.db, ctx.workspaceId, input)),

  get: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(async ({ ctx, input }) => getRun(ctx.db, ctx.workspaceId, input.id, { role: ctx.role, operator: await ctx.isOperator() })),

  /** A train run's chart curves, each bucketed (M4) to `width` pixel columns (features/metrics/server/run-series.ts). */
  series: viewerProcedure.input(RunSeriesInput).query(({ ctx, input }) => runSeries(ctx.db, ctx.workspaceId, input)),

  trajectories: viewerProcedure
    .input(
      z.object({
        runId: z.string().min(1),
        step: z.number().int().min(0).optional(),
        split: z.enum(["train", "val"]).optional(),
        limit: z.number().int().min(1).max(500).default(100),
        cursor: z.number().int().nullish(),
      }),
    )
    .query(({ ctx, input }) => listTrajectories(ctx.db, ctx.workspaceId, input)),

  /** One rollout's tokens for the token view: text, sampled/trained, sampling and trainer logprobs, ratio. */
  rolloutTokens: viewerProcedure
    .input(z.object({ runId: z.string().min(1), rolloutId: z.string().min(1) }))
    .query(({ ctx, input }) => getRolloutTokens(ctx.db, ctx.workspaceId, input)),

  events: viewerProcedure
    .input(
      z.object({
        runId: z.string().min(1),
        afterSeq: z.number().int().min(0).default(0),
        limit: z.number().int().min(1).max(2000).default(500),
      }),
    )
    .query(({ ctx, input }) => listEvents(ctx.db, ctx.workspaceId, input)),

  stop: memberProcedure
    .input(z.object({ id: z.string().min(1) }))
    .mutation(({ ctx, input }) => stopRun(ctx.db, ctx.workspaceId, input.id, ctx.runnerById)),

  /** Continue a stopped, failed or lost train run from its newest checkpoint (on another runner when its own is gone). */
  resume: memberProcedure
    .input(z.object({ id: z.string().min(1) }))
    .mutation(({ ctx, input }) => resumeRun(ctx.db, ctx.workspaceId, input.id, { byId: ctx.runnerById, fallback: ctx.getRunner })),

  /** Run an edited reward over the run's stored trajectories: old vs new rewards and advantages (writes nothing). */
  rescore: memberProcedure
    .input(RescoreRunInput)
    .mutation(({ ctx, input }) => rescoreRun(ctx.db, ctx.workspaceId, input, { byId: ctx.runnerById, default: ctx.getRunner })),
});
