import { z } from "zod";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "@/server/trpc";
import { isAppError } from "@/server/errors";
import { listRunners, registerWorkspaceRunner, removeRunner, runnerStatusFor, updateRunner } from "./runner-pool";
import { seesRunnerDetails } from "./runner-visibility";
import { oneLine } from "@contracts/text-rules";

const RunnerId = z.string().min(1).max(100);

export const runnersRouter = createTRPCRouter({
  /**
   * The configured runner and whether it answers (for a status badge); never throws when it is down. Only
   * this workspace's runs; the URL, the engine's health and queue and the error text only for callers who see
   * the runner's details (runner-visibility.ts: the instance's operator, or admins of the workspace that
   * registered it).
   */
  status: viewerProcedure.query(async ({ ctx }) => {
    const runner = await ctx.getRunner();
    const details = seesRunnerDetails(runner, { workspaceId: ctx.workspaceId, role: ctx.role, operator: await ctx.isOperator() });
    const url = details ? runner.url : null;
    try {
      const status = await runnerStatusFor(ctx.db, ctx.workspaceId, await runner.status(), { details });
      await ctx.db.runner.update({ where: { id: runner.id }, data: { lastSeenAt: new Date() } });
      return { name: runner.name, url, reachable: true as const, status, error: null };
    } catch (e) {
      if (!isAppError(e)) throw e;
      return { name: runner.name, url, reachable: false as const, status: null, error: details ? e.message : `runner '${runner.name}' did not answer` };
    }
  }),

  /** The runners this workspace may use (its own and the instance's), with health and this workspace's run counts. */
  list: viewerProcedure.query(async ({ ctx }) => listRunners(ctx.db, { workspaceId: ctx.workspaceId, role: ctx.role, operator: await ctx.isOperator() })),

  /** Registers a runner of this workspace; the URL must answer and accept the token first (nothing saved otherwise). */
  register: adminProcedure
    .input(
      z.object({
        name: oneLine(z.string().trim().min(1, "name: give the runner a name").max(60, "name: at most 60 characters")),
        url: oneLine(z.string().trim().min(1, "url: the runner's address, e.g. http://gpu-box:4100").max(500)),
        token: oneLine(z.string().min(8, "token: the runner's RUNNER_TOKEN (at least 8 characters)").max(500)),
        capacity: z.number().int().min(1).max(1000).optional(),
      }),
    )
    .mutation(({ ctx, input }) => registerWorkspaceRunner(ctx.db, ctx.workspaceId, input)),

  /** Capacity (null = what the runner reports) and enabled (a disabled runner gets no new runs). */
  update: adminProcedure
    .input(z.object({ id: RunnerId, capacity: z.number().int().min(1).max(1000).nullable().optional(), enabled: z.boolean().optional() }))
    .mutation(({ ctx, input }) => updateRunner(ctx.db, ctx.workspaceId, input)),

  /** Forgets a runner of this workspace; refused while it has active runs. */
  remove: adminProcedure.input(z.object({ id: RunnerId })).mutation(({ ctx, input }) => removeRunner(ctx.db, ctx.workspaceId, input.id)),
});
