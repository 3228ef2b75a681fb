import { z } from "zod";
import { ExperimentFiles, RunKind } from "@contracts";
import { createTRPCRouter, viewerProcedure, memberProcedure } from "../trpc";
import * as experiments from "../services/experiments";
import * as templates from "../services/templates";
import { defaultExperimentId } from "../services/workspace";

/** The files of one experiment (the contract caps their size and names: 8 MB, scenario/reward/tasks/config/lib). */
export const FilesInput = ExperimentFiles;

export const experimentsRouter = createTRPCRouter({
  list: viewerProcedure.query(({ ctx }) => experiments.listExperiments(ctx.db, ctx.workspaceId)),

  get: viewerProcedure
    .input(z.object({ id: z.string().min(1), versionNumber: z.number().int().min(1).optional() }))
    .query(({ ctx, input }) => experiments.getExperiment(ctx.db, ctx.workspaceId, input.id, input.versionNumber)),

  versions: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => experiments.listVersions(ctx.db, ctx.workspaceId, input.id)),

  default: viewerProcedure.query(({ ctx }) => defaultExperimentId(ctx.db, ctx.workspaceId)),

  create: memberProcedure
    .input(z.object({ name: z.string().trim().min(1).max(120), description: z.string().max(2000).optional(), files: FilesInput }))
    .mutation(({ ctx, input }) => experiments.createExperiment(ctx.db, ctx.workspaceId, input)),

  /** A new experiment with a template's files (template null: the blank experiment). Names are unique per workspace. */
  createFromTemplate: memberProcedure
    .input(
      z.object({
        name: z.string().trim().min(1, "a name is required").max(120),
        description: z.string().max(2000).optional(),
        template: z.string().min(1).max(100).nullable(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const start = await templates.startingFiles(input.template);
      return experiments.createExperiment(ctx.db, ctx.workspaceId, {
        name: input.name,
        description: input.description?.trim() || start.description,
        files: start.files,
      });
    }),

  /** Runtime errors of the latest run that produced rollouts, with its code (see latestRuntimeErrors). */
  latestRuntimeErrors: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => experiments.latestRuntimeErrors(ctx.db, ctx.workspaceId, input.id)),

  save: memberProcedure
    .input(z.object({ id: z.string().min(1), files: FilesInput }))
    .mutation(({ ctx, input }) => experiments.saveVersion(ctx.db, ctx.workspaceId, input.id, input.files)),

  validate: memberProcedure
    .input(z.object({ files: FilesInput, kind: RunKind.default("train") }))
    .mutation(async ({ ctx, input }) => experiments.validateFiles(await ctx.getRunner(), input.files, input.kind)),
});
