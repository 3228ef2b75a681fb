import { z } from "zod";
import { createTRPCRouter, viewerProcedure } from "@/server/trpc";
import { COMPARE_MAX_RUNS, COMPARE_MIN_RUNS } from "@/features/compare/compare-url";
import { compareRuns } from "./compare";

export const CompareRunsInput = z.object({
  runIds: z.array(z.string().min(1)).min(COMPARE_MIN_RUNS).max(COMPARE_MAX_RUNS),
  /** The run every other run's per-task rewards are measured against; one of runIds. */
  baselineRunId: z.string().min(1),
});

export const compareRouter = createTRPCRouter({
  /** 2–8 runs of the caller's workspace side by side: charts, config diff, files, per-task reward deltas. */
  runs: viewerProcedure.input(CompareRunsInput).query(({ ctx, input }) => compareRuns(ctx.db, ctx.workspaceId, input)),
});
