/**
 * The default workspace and the default experiment (templates/say-the-word), created once. Until login
 * exists every request acts in the default workspace; server/trpc.ts's workspaceProcedure is the seam.
 */
import type { DbOrTx } from "@/server/db-types";
import { filesHash } from "@/features/experiments/server";
import { readTemplate } from "@/features/experiments/server";
import { ensureBundledMcpServers } from "./config/mcp-servers";

export const DEFAULT_WORKSPACE_SLUG = "default";
export const DEFAULT_EXPERIMENT_NAME = "say-the-word";
const DEFAULT_TEMPLATE = "say-the-word";

export async function ensureDefaultWorkspace(db: DbOrTx): Promise<{ id: string }> {
  const existing = await db.workspace.findUnique({ where: { slug: DEFAULT_WORKSPACE_SLUG }, select: { id: true } });
  if (existing) return existing;
  // Upsert: two processes booting at once both get the one row (and both seeding it is harmless).
  const ws = await db.workspace.upsert({
    where: { slug: DEFAULT_WORKSPACE_SLUG },
    update: {},
    create: { slug: DEFAULT_WORKSPACE_SLUG, name: "Default workspace" },
    select: { id: true },
  });
  await ensureBundledMcpServers(db, ws.id);
  return ws;
}

/**
 * Creates the workspace's default experiment (version 1 = the template) the first time, and returns it.
 * Later edits are new versions of it; a workspace whose default experiment is gone gets its oldest one.
 */
export async function ensureDefaultExperiment(
  db: DbOrTx,
  workspaceId: string,
  opts: { templateRoot?: string } = {},
): Promise<{ id: string }> {
  const existing = await db.experiment.findUnique({
    where: { workspaceId_name: { workspaceId, name: DEFAULT_EXPERIMENT_NAME } },
    select: { id: true },
  });
  if (existing) return existing;
  const files = await readTemplate(DEFAULT_TEMPLATE, opts.templateRoot);
  try {
    return await db.experiment.create({
      data: {
        workspaceId,
        name: DEFAULT_EXPERIMENT_NAME,
        description: "Teach a small model to say a given word: the smallest complete RL loop.",
        versions: { create: { number: 1, files, filesHash: filesHash(files) } },
      },
      select: { id: true },
    });
  } catch (e) {
    // Two processes booting at once: the other one created it.
    const again = await db.experiment.findUnique({
      where: { workspaceId_name: { workspaceId, name: DEFAULT_EXPERIMENT_NAME } },
      select: { id: true },
    });
    if (again) return again;
    throw e;
  }
}

export async function defaultExperimentId(db: DbOrTx, workspaceId: string): Promise<{ id: string }> {
  const named = await db.experiment.findUnique({
    where: { workspaceId_name: { workspaceId, name: DEFAULT_EXPERIMENT_NAME } },
    select: { id: true },
  });
  if (named) return named;
  const oldest = await db.experiment.findFirst({ where: { workspaceId }, orderBy: { createdAt: "asc" }, select: { id: true } });
  return oldest ?? ensureDefaultExperiment(db, workspaceId);
}
