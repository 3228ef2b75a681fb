/**
 * What a workspace's admins configure for its runs: secrets (write-only: names are listed, values never) and
 * registered stdio MCP servers (the only commands its experiments may start on the runner, by name).
 */
import { McpServerDefinition, McpServerName, SecretName } from "@contracts";
import { z } from "zod";
import { adminProcedure, createTRPCRouter, viewerProcedure } from "@/server/trpc";
import * as mcpServers from "./config/mcp-servers";
import * as secrets from "./config/secrets";

export const secretsRouter = createTRPCRouter({
  /** Names, who set each and when; never a value. Members see them to refer to them in config.json. */
  list: viewerProcedure.query(({ ctx }) => secrets.listSecrets(ctx.db, ctx.workspaceId)),

  /** Set (or replace) a secret; its value is not shown again. */
  set: adminProcedure.input(secrets.SecretInput).mutation(({ ctx, input }) => secrets.setSecret(ctx.db, ctx.workspaceId, ctx.user.id, input)),

  remove: adminProcedure.input(z.object({ name: SecretName })).mutation(({ ctx, input }) => secrets.deleteSecret(ctx.db, ctx.workspaceId, input.name)),
});

export const mcpServersRouter = createTRPCRouter({
  list: viewerProcedure.query(({ ctx }) => mcpServers.listMcpServers(ctx.db, ctx.workspaceId)),

  /** Register (or replace) a stdio server experiments may name. */
  set: adminProcedure
    .input(z.object({ name: McpServerName, definition: McpServerDefinition }))
    .mutation(({ ctx, input }) => mcpServers.setMcpServer(ctx.db, ctx.workspaceId, ctx.user.id, input)),

  remove: adminProcedure.input(z.object({ name: McpServerName })).mutation(({ ctx, input }) => mcpServers.deleteMcpServer(ctx.db, ctx.workspaceId, input.name)),
});
