/**
 * An ART project is an experiment of the workspace, found by name or created for it. A created one holds a
 * minimal valid file set that says where its code runs (the ART client's own repository) and whose
 * config.json names the base model, so the run page's "Config & code" tab and compare show something true.
 * An existing experiment of that name is used as it is (its latest version).
 */
import type { ExperimentFiles } from "@contracts";
import { filesHash } from "@/features/experiments/server";
import type { DbOrTx } from "@/server/db-types";

export function artExperimentFiles(project: string, baseModel: string): ExperimentFiles {
  const note = `// This experiment's runs are driven by an OpenPipe ART client (project "${project}"): its rollouts,\n// rewards and code live in the client's own repository. See docs/art.md.\n`;
  return {
    "scenario.ts": `${note}export default async function scenario() {\n  throw new Error("an ART project's rollouts are played by its ART client, not by Rollbook's runner");\n}\n`,
    "reward.ts": `${note}export default function reward() {\n  return 0;\n}\n`,
    "tasks.jsonl": "",
    "config.json": `${JSON.stringify({ model: baseModel }, null, 2)}\n`,
  };
}

/** The project's experiment and the version a new run points at (its latest). */
export function ensureArtExperiment(db: DbOrTx, workspaceId: string, project: string, baseModel: string): Promise<{ experimentId: string; versionId: string }> {
  return ensureClientExperiment(db, workspaceId, project, artExperimentFiles(project, baseModel), `OpenPipe ART project "${project}" (its ART client logs its runs: docs/art.md).`);
}

/**
 * A client-driven project's experiment (ART's, Tinker's: features/tinker): found by name, or created with
 * `files` (what says where its code runs) and `description`. The caller holds the project's lock.
 */
export async function ensureClientExperiment(db: DbOrTx, workspaceId: string, project: string, files: ExperimentFiles, description: string): Promise<{ experimentId: string; versionId: string }> {
  const found = await db.experiment.findUnique({
    where: { workspaceId_name: { workspaceId, name: project } },
    select: { id: true, versions: { orderBy: { number: "desc" }, take: 1, select: { id: true } } },
  });
  const latest = found?.versions[0];
  if (found && latest) return { experimentId: found.id, versionId: latest.id };
  if (found) {
    const v = await db.experimentVersion.create({ data: { experimentId: found.id, number: 1, files, filesHash: filesHash(files) }, select: { id: true } });
    return { experimentId: found.id, versionId: v.id };
  }
  // The caller holds the project's lock (art-models.ts): no other call creates it meanwhile.
  const exp = await db.experiment.create({
    data: {
      workspaceId,
      name: project,
      description,
      versions: { create: { number: 1, files, filesHash: filesHash(files) } },
    },
    select: { id: true, versions: { select: { id: true } } },
  });
  return { experimentId: exp.id, versionId: exp.versions[0]!.id };
}
