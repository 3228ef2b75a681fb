/**
 * A workspace's registered stdio MCP servers: what its experiments may start on the shared runner, by name
 * (mcp.servers.<x> = { "transport": "stdio", "server": "<name>" }). Admins register them (command, args, env
 * with `${SECRET}` references, whether it may use the network); members' experiments only name them, and the
 * runner runs each in its sandbox (gpu-runner/src/mcp/sandbox.ts). Everyone in the workspace sees the
 * definitions: they hold no secret values, only references.
 */
import { BUNDLED_MCP_SERVERS, McpServerDefinition, McpServerName } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { AppError } from "@/server/errors";
import type { DbOrTx } from "@/server/db-types";

/** Registers the bundled servers in a new workspace (the migration did so for the workspaces that existed). */
export async function ensureBundledMcpServers(db: DbOrTx, workspaceId: string): Promise<void> {
  for (const [name, definition] of Object.entries(BUNDLED_MCP_SERVERS)) {
    await db.mcpServerDefinition.upsert({
      where: { workspaceId_name: { workspaceId, name } },
      create: { workspaceId, name, definition: definition as unknown as Prisma.InputJsonValue },
      update: {},
    });
  }
}

export async function listMcpServers(db: DbOrTx, workspaceId: string) {
  const rows = await db.mcpServerDefinition.findMany({
    where: { workspaceId },
    orderBy: { name: "asc" },
    select: { name: true, definition: true, updatedAt: true, updatedBy: { select: { name: true, email: true } } },
  });
  return rows.map((r) => ({ ...r, definition: McpServerDefinition.parse(r.definition) }));
}

export async function setMcpServer(db: DbOrTx, workspaceId: string, userId: string, input: { name: string; definition: McpServerDefinition }) {
  const name = McpServerName.parse(input.name);
  const definition = input.definition as unknown as Prisma.InputJsonValue;
  await db.mcpServerDefinition.upsert({
    where: { workspaceId_name: { workspaceId, name } },
    create: { workspaceId, name, definition, updatedById: userId },
    update: { definition, updatedById: userId },
  });
  return { name };
}

export async function deleteMcpServer(db: DbOrTx, workspaceId: string, name: string) {
  const res = await db.mcpServerDefinition.deleteMany({ where: { workspaceId, name } });
  if (res.count === 0) throw new AppError("NOT_FOUND", `MCP server ${name} not found`);
  return { ok: true as const };
}

/** The definitions of `names` the workspace has (a run sends these to the runner); absent names are left out. */
export async function mcpServerDefinitions(db: DbOrTx, workspaceId: string, names: readonly string[]): Promise<Record<string, McpServerDefinition>> {
  if (names.length === 0) return {};
  const rows = await db.mcpServerDefinition.findMany({ where: { workspaceId, name: { in: [...names] } }, select: { name: true, definition: true } });
  return Object.fromEntries(rows.map((r) => [r.name, McpServerDefinition.parse(r.definition)]));
}
