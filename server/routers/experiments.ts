import { z } from "zod";
import { ExperimentFiles, RunKind } from "@contracts";
import { createTRPCRouter, workspaceProcedure } from "../trpc";
import * as experiments from "../services/experiments";
import * as templates from "../services/templates";
import { defaultExperimentId } from "../services/workspace";

/** The files of one experiment (the contract caps their size and names: 8 MB, scenario/reward/tasks/config/lib). */
export const FilesInput = ExperimentFiles;

export const experimentsRouter = createTRPCRouter({
  list: workspaceProcedure.query(({ ctx }) => experiments.listExperiments(ctx.db, ctx.workspaceId)),

  get: workspaceProcedure
    .input(z.object({ id: z.string().min(1), versionNumber: z.number().int().min(1).optional() }))
    .query(({ ctx, input }) => experiments.getExperiment(ctx.db, ctx.workspaceId, input.id, input.versionNumber)),

  versions: workspaceProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => experiments.listVersions(ctx.db, ctx.workspaceId, input.id)),

  default: workspaceProcedure.query(({ ctx }) => defaultExperimentId(ctx.db, ctx.workspaceId)),

  create: workspaceProcedure
    .input(z.object({ name: z.string().trim().min(1).max(120), description: z.string().max(2000).optional(), files: FilesInput }))
    .mutation(({ ctx, input }) => experiments.createExperiment(ctx.db, ctx.workspaceId, input)),

  /** A new experiment with a template's files (template null: the blank experiment). Names are unique per workspace. */
  createFromTemplate: workspaceProcedure
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
  latestRuntimeErrors: workspaceProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => experiments.latestRuntimeErrors(ctx.db, ctx.workspaceId, input.id)),

  save: workspaceProcedure
    .input(z.object({ id: z.string().min(1), files: FilesInput }))
    .mutation(({ ctx, input }) => experiments.saveVersion(ctx.db, ctx.workspaceId, input.id, input.files)),

  validate: workspaceProcedure
    .input(z.object({ files: FilesInput, kind: RunKind.default("train") }))
    .mutation(async ({ ctx, input }) => experiments.validateFiles(await ctx.getRunner(), input.files, input.kind)),
});
