/**
 * A run's checkpoints: the list (what to download or serve), and chat with one of them or the run's base
 * model (the run page's side-by-side panel). Downloads and the OpenAI-compatible endpoint are plain HTTP
 * routes (features/checkpoints/server/checkpoint-download.ts, features/openai-api/server/openai-api.ts) over the same service.
 */
import { z } from "zod";
import { ChatMessage } from "@contracts";
import { createTRPCRouter, memberProcedure, viewerProcedure } from "@/server/trpc";
import { AppError } from "@/server/errors";
import { deleteCheckpoints } from "./checkpoint-delete";
import * as checkpoints from "./checkpoints";

const REFUSAL_CODE = { missing: "NOT_FOUND", newest: "BAD_INPUT", runner: "RUNNER_UNAVAILABLE" } as const;

export const checkpointsRouter = createTRPCRouter({
  list: viewerProcedure
    .input(z.object({ runId: z.string().min(1) }))
    .query(({ ctx, input }) => checkpoints.listCheckpoints(ctx.db, ctx.workspaceId, input.runId)),

  /** One reply; `step: null` asks the run's base model. A viewer may chat: it changes nothing stored. */
  chat: viewerProcedure
    .input(
      z.object({
        runId: z.string().min(1),
        step: z.number().int().min(0).nullable(),
        messages: z.array(ChatMessage).min(1).max(100),
        maxTokens: z.number().int().min(1).max(2048).default(256),
        temperature: z.number().min(0).max(2).default(0),
      }),
    )
    .mutation(({ ctx, input }) => checkpoints.chatWithRun(ctx.db, ctx.workspaceId, input)),

  /**
   * Delete one checkpoint (the panel's Delete): the one mechanism ART's delete_checkpoints and keep_last use
   * (checkpoint-delete.ts); the run's newest is refused by name. Asking for a gone step is not an error.
   */
  delete: memberProcedure
    .input(z.object({ runId: z.string().min(1), step: z.number().int().min(0) }))
    .mutation(async ({ ctx, input }) => {
      const run = await ctx.db.run.findFirst({ where: { id: input.runId, workspaceId: ctx.workspaceId }, select: { id: true } });
      if (!run) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
      const out = await deleteCheckpoints(ctx.db, run.id, [input.step]);
      if (!out.ok) throw new AppError(REFUSAL_CODE[out.reason], out.message);
      return { deleted: out.deleted_count, deferred: out.deferred_steps };
    }),
});
