import { z } from "zod";
import { RunKind } from "@contracts";
import { BaseVersion, ExperimentDescription, ExperimentName, FilesInput } from "../schema";
import { createTRPCRouter, viewerProcedure, memberProcedure, adminProcedure } from "@/server/trpc";
import * as experiments from "./experiments";
import * as projects from "./experiment-projects";
import * as templates from "./templates";
import { defaultExperimentId } from "@/features/workspace/server";

const ExperimentId = z.string().min(1);

export const experimentsRouter = createTRPCRouter({
  list: viewerProcedure
    .input(z.object({ includeArchived: z.boolean().default(false) }).default({ includeArchived: false }))
    .query(({ ctx, input }) => experiments.listExperiments(ctx.db, ctx.workspaceId, input)),

  get: viewerProcedure
    .input(z.object({ id: z.string().min(1), versionNumber: z.number().int().min(1).optional() }))
    .query(({ ctx, input }) => experiments.getExperiment(ctx.db, ctx.workspaceId, input.id, input.versionNumber)),

  /** The version history, newest first, a page at a time (`before`: the last page's nextBefore). */
  versions: viewerProcedure
    .input(z.object({ id: ExperimentId, before: z.number().int().min(1).optional(), limit: z.number().int().min(1).max(200).optional() }))
    .query(({ ctx, input }) => projects.versionHistory(ctx.db, ctx.workspaceId, input.id, input)),

  default: viewerProcedure.query(({ ctx }) => defaultExperimentId(ctx.db, ctx.workspaceId)),

  create: memberProcedure
    .input(z.object({ name: ExperimentName, description: ExperimentDescription.optional(), files: FilesInput }))
    .mutation(({ ctx, input }) => experiments.createExperiment(ctx.db, ctx.workspaceId, input, ctx.user.id)),

  /** A new experiment with a template's files (template null: the blank experiment). Names are unique per workspace. */
  createFromTemplate: memberProcedure
    .input(
      z.object({
        name: ExperimentName,
        description: ExperimentDescription.optional(),
        template: z.string().min(1).max(100).nullable(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const start = await templates.startingFiles(input.template);
      return experiments.createExperiment(ctx.db, ctx.workspaceId, {
        name: input.name,
        description: input.description?.trim() || start.description,
        files: start.files,
      }, ctx.user.id);
    }),

  /** Runtime errors of the latest run that produced rollouts, with its code (see latestRuntimeErrors). */
  latestRuntimeErrors: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .query(({ ctx, input }) => experiments.latestRuntimeErrors(ctx.db, ctx.workspaceId, input.id)),

  /** A new version (none when the files equal the latest); `baseVersion`: see BaseVersion. */
  save: memberProcedure
    .input(z.object({ id: ExperimentId, files: FilesInput, baseVersion: BaseVersion }))
    .mutation(({ ctx, input }) =>
      experiments.saveVersion(ctx.db, ctx.workspaceId, input.id, input.files, { baseVersion: input.baseVersion, createdById: ctx.user.id }),
    ),

  rename: memberProcedure
    .input(z.object({ id: ExperimentId, name: ExperimentName }))
    .mutation(({ ctx, input }) => projects.renameExperiment(ctx.db, ctx.workspaceId, input.id, input.name)),

  /** A copy of the latest version's files as a new experiment ("<name> (copy)", "(copy 2)", … unless named). */
  duplicate: memberProcedure
    .input(z.object({ id: ExperimentId, name: ExperimentName.optional() }))
    .mutation(({ ctx, input }) => projects.duplicateExperiment(ctx.db, ctx.workspaceId, input.id, { name: input.name, createdById: ctx.user.id })),

  setArchived: memberProcedure
    .input(z.object({ id: ExperimentId, archived: z.boolean() }))
    .mutation(({ ctx, input }) => projects.setArchived(ctx.db, ctx.workspaceId, input.id, input.archived)),

  /** Admins only: the experiment, its versions and runs; refused while one of its runs is queued or running. */
  delete: adminProcedure
    .input(z.object({ id: ExperimentId }))
    .mutation(({ ctx, input }) => projects.deleteExperiment(ctx.db, ctx.workspaceId, input.id)),

  /** A new version with an earlier version's files (restoredFrom = its number); history is never rewritten. */
  restore: memberProcedure
    .input(z.object({ id: ExperimentId, number: z.number().int().min(1), baseVersion: BaseVersion }))
    .mutation(({ ctx, input }) =>
      projects.restoreVersion(ctx.db, ctx.workspaceId, input.id, input.number, { createdById: ctx.user.id, baseVersion: input.baseVersion }),
    ),

  validate: memberProcedure
    .input(z.object({ files: FilesInput, kind: RunKind.default("train") }))
    .mutation(async ({ ctx, input }) => experiments.validateFiles(await ctx.getRunner(), input.files, input.kind)),
});
