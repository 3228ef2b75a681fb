/** The active workspace and its people: members, roles, invite links. */
import { z } from "zod";
import { RoleName } from "@contracts/roles";
import { adminProcedure, createTRPCRouter, ownerProcedure, viewerProcedure } from "@/server/trpc";
import * as invites from "./invites";
import * as members from "./members";
import { oneLine } from "@contracts/text-rules";

export const workspaceRouter = createTRPCRouter({
  /** The workspace the caller is acting in, and their role there (the UI hides what the role cannot do). */
  current: viewerProcedure.query(async ({ ctx }) => {
    const ws = await ctx.db.workspace.findUniqueOrThrow({ where: { id: ctx.workspaceId }, select: { id: true, name: true, slug: true } });
    return { ...ws, role: ctx.role };
  }),

  members: viewerProcedure.query(({ ctx }) => members.listMembers(ctx.db, ctx.workspaceId)),

  rename: ownerProcedure
    .input(z.object({ name: oneLine(z.string().trim().min(1, "a name is required").max(120)) }))
    .mutation(({ ctx, input }) => members.renameWorkspace(ctx.db, ctx.workspaceId, input.name)),

  setRole: adminProcedure
    .input(z.object({ userId: z.string().min(1), role: RoleName }))
    .mutation(({ ctx, input }) => members.setMemberRole(ctx.db, { workspaceId: ctx.workspaceId, actorRole: ctx.role, ...input })),

  removeMember: adminProcedure
    .input(z.object({ userId: z.string().min(1) }))
    .mutation(({ ctx, input }) =>
      members.removeMember(ctx.db, { workspaceId: ctx.workspaceId, actorId: ctx.user.id, actorRole: ctx.role, userId: input.userId }),
    ),

  /** Leave the active workspace (not the owner). */
  leave: viewerProcedure.mutation(({ ctx }) =>
    members.removeMember(ctx.db, { workspaceId: ctx.workspaceId, actorId: ctx.user.id, actorRole: ctx.role, userId: ctx.user.id }),
  ),

  invites: adminProcedure.query(({ ctx }) => invites.listInvites(ctx.db, ctx.workspaceId)),

  /** An invite link (its token is in this response only). */
  createInvite: adminProcedure
    .input(z.object({ role: RoleName, days: z.union([z.literal(1), z.literal(7), z.literal(30)]).default(7) }))
    .mutation(({ ctx, input }) =>
      invites.createInvite(ctx.db, { workspaceId: ctx.workspaceId, createdById: ctx.user.id, inviterRole: ctx.role, role: input.role, days: input.days }),
    ),

  revokeInvite: adminProcedure
    .input(z.object({ id: z.string().min(1) }))
    .mutation(({ ctx, input }) => invites.revokeInvite(ctx.db, ctx.workspaceId, input.id)),
});
