/**
 * Alerts (the bell: viewers and up), a run's pathology flags (viewers and up) and the workspace's webhook
 * settings and delivery log (admins and up).
 */
import { z } from "zod";
import { AppError } from "@/server/errors";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "@/server/trpc";
import { listAlerts, markAlertsRead } from "./notify/alerts";
import { getWebhook, listDeliveries, removeWebhook, setWebhook } from "./notify/webhook-settings";
import { listRunFlags } from "./detect/store";
import { oneLine } from "@contracts/text-rules";

export const flagsRouter = createTRPCRouter({
  /** The workspace's newest alerts and how many the caller has not seen. */
  list: viewerProcedure.query(({ ctx }) => listAlerts(ctx.db, ctx.workspaceId, ctx.user.id)),

  /** Everything up to now counts as seen (for the caller only). */
  markRead: viewerProcedure.mutation(({ ctx }) => markAlertsRead(ctx.db, ctx.workspaceId, ctx.user.id)),

  /** The pathology flags raised on a run, oldest first. */
  runFlags: viewerProcedure.input(z.object({ runId: z.string().min(1).max(100) })).query(async ({ ctx, input }) => {
    const flags = await listRunFlags(ctx.db, ctx.workspaceId, input.runId);
    if (!flags) throw new AppError("NOT_FOUND", `run ${input.runId} not found`);
    return flags;
  }),

  /** The webhook (its URL and a hint of the secret), or null. */
  webhook: adminProcedure.query(({ ctx }) => getWebhook(ctx.db, ctx.workspaceId)),

  /** Set the webhook URL; a new signing secret is made and returned in this response only. */
  setWebhook: adminProcedure
    .input(z.object({ url: oneLine(z.string().max(2000, "url: at most 2000 characters")) }))
    .mutation(({ ctx, input }) => setWebhook(ctx.db, ctx.workspaceId, input.url)),

  removeWebhook: adminProcedure.mutation(({ ctx }) => removeWebhook(ctx.db, ctx.workspaceId)),

  /** The delivery log: newest first, with status code, attempts and times. */
  deliveries: adminProcedure.query(({ ctx }) => listDeliveries(ctx.db, ctx.workspaceId)),
});
