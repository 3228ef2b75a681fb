import { createTRPCRouter, viewerProcedure } from "../trpc";
import { isAppError } from "../errors";

export const runnersRouter = createTRPCRouter({
  /** The configured runner and whether it answers (for a status badge); never throws when it is down. */
  status: viewerProcedure.query(async ({ ctx }) => {
    const runner = await ctx.getRunner();
    try {
      const status = await runner.status();
      await ctx.db.runner.update({ where: { id: runner.id }, data: { lastSeenAt: new Date() } });
      return { name: runner.name, url: runner.url, reachable: true as const, status, error: null };
    } catch (e) {
      if (!isAppError(e)) throw e;
      return { name: runner.name, url: runner.url, reachable: false as const, status: null, error: e.message };
    }
  }),
});
