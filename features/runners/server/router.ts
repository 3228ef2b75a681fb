import { z } from "zod";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "@/server/trpc";
import { isAppError } from "@/server/errors";
import { listRunners, registerWorkspaceRunner, removeRunner, runnerStatusFor, updateRunner } from "./runner-pool";
import { roleAtLeast } from "@contracts/roles";
import { oneLine } from "@contracts/text-rules";

const RunnerId = z.string().min(1).max(100);

export const runnersRouter = createTRPCRouter({
  /**
   * The configured runner and whether it answers (for a status badge); never throws when it is down. Only
   * this workspace's runs; the URL, the engine's health and the error text for admins only (runnerStatusFor).
   */
  status: viewerProcedure.query(async ({ ctx }) => {
    const runner = await ctx.getRunner();
    const admin = roleAtLeast(ctx.role, "admin");
    const url = admin ? runner.url : null;
    try {
      const status = await runnerStatusFor(ctx.db, ctx.workspaceId, await runner.status(), { admin });
      await ctx.db.runner.update({ where: { id: runner.id }, data: { lastSeenAt: new Date() } });
      return { name: runner.name, url, reachable: true as const, status, error: null };
    } catch (e) {
      if (!isAppError(e)) throw e;
      return { name: runner.name, url, reachable: false as const, status: null, error: admin ? e.message : `runner '${runner.name}' did not answer` };
    }
  }),

  /** The runners this workspace may use (its own and the instance's), with health and this workspace's run counts. */
  list: viewerProcedure.query(({ ctx }) => listRunners(ctx.db, ctx.workspaceId, { admin: roleAtLeast(ctx.role, "admin") })),

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
