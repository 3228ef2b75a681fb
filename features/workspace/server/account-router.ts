/** The signed-in user's own things: who am I, my workspaces, my API tokens, joining by invite. */
import { z } from "zod";
import { createTRPCRouter, publicProcedure, userProcedure, viewerProcedure } from "@/server/trpc";
import { createWorkspace, userCount } from "./accounts";
import { configuredProviders } from "@/server/auth/auth";
import { env } from "@/server/env";
import * as tokens from "./api-tokens";
import * as invites from "./invites";
import { myWorkspaces } from "./members";
import { oneLine } from "@contracts/text-rules";

export const accountRouter = createTRPCRouter({
  /** For the signed-out pages: does an owner exist yet (else the first visitor creates one), may one sign up. */
  setupState: publicProcedure.query(async ({ ctx }) => {
    const users = await userCount(ctx.db);
    return { needsOwner: users === 0, signUpOpen: users === 0 || !env().AUTH_DISABLE_SIGNUP, providers: configuredProviders() };
  }),

  me: userProcedure.query(({ ctx }) => ctx.user),

  workspaces: userProcedure.query(({ ctx }) => myWorkspaces(ctx.db, ctx.user.id)),

  /** A new workspace the caller owns (a team, a project): switch to it with the workspace cookie. */
  createWorkspace: userProcedure
    .input(z.object({ name: oneLine(z.string().trim().min(1, "a name is required").max(120)) }))
    .mutation(({ ctx, input }) => createWorkspace(ctx.db, ctx.user.id, input.name, ctx.user.email)),

  /** What an invite link offers (shown before joining; also to a signed-out visitor, who must sign in first). */
  describeInvite: publicProcedure
    .input(z.object({ token: z.string().min(10).max(200) }))
    .query(({ ctx, input }) => invites.describeInvite(ctx.db, input.token)),

  acceptInvite: userProcedure
    .input(z.object({ token: z.string().min(10).max(200) }))
    .mutation(({ ctx, input }) => invites.acceptInvite(ctx.db, ctx.user.id, input.token)),

  /** The caller's API tokens for the active workspace. */
  tokens: viewerProcedure.query(({ ctx }) => tokens.listApiTokens(ctx.db, ctx.user.id, ctx.workspaceId)),

  /** A new token: its secret is in this response only. */
  createToken: viewerProcedure
    .input(z.object({ name: oneLine(z.string().trim().min(1, "a name is required").max(100)) }))
    .mutation(({ ctx, input }) => tokens.createApiToken(ctx.db, { userId: ctx.user.id, workspaceId: ctx.workspaceId, name: input.name })),

  revokeToken: viewerProcedure
    .input(z.object({ id: z.string().min(1) }))
    .mutation(({ ctx, input }) => tokens.revokeApiToken(ctx.db, ctx.user.id, ctx.workspaceId, input.id)),
});
