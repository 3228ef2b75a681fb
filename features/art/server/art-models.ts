/**
 * ART models are Rollbook runs of kind "art" (no runner: the ART client logs its steps). Creating one finds
 * or creates the project's experiment (art-experiment.ts) and writes a `running` run through the lifecycle
 * (its status owner), recording who drives it (Run.artClient: entity, project, name, token). Every lookup is
 * inside the caller's workspace: another workspace's model is "not found", never a hint that it exists.
 */
import { randomUUID } from "node:crypto";
import { parseRunConfig, RunEvent, type RunConfig } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { announce, createRunRecord, ingestAndEmit, recordSignOfLife, recoverRun } from "@/features/run-lifecycle/server";
import { codeHash, tasksHash } from "@/features/experiments/server";
import { baseModelProblem, servedModels } from "@/features/runners/server";
import type { Db, DbOrTx } from "@/server/db-types";
import { readArtClient, type ArtClientInfo, type CreateModelBody } from "../schema";
import { artExperimentFiles, ensureArtExperiment } from "./art-experiment";

/** What ART's client reads back as its Model. */
export interface ArtModelView {
  id: string;
  entity: string;
  project: string;
  name: string;
  base_model: string;
  run_id: string;
}

export interface ArtRun {
  id: string;
  status: string;
  attempt: number;
  baseModel: string;
  client: ArtClientInfo;
}

export type CreateOutcome = { ok: true; model: ArtModelView; created: boolean } | { ok: false; status: 400 | 409; message: string; param: string };

const newRunId = () => `r${randomUUID().replace(/-/g, "")}`;

export function modelView(run: ArtRun): ArtModelView {
  return { id: run.id, entity: run.client.entity, project: run.client.project, name: run.client.name, base_model: run.baseModel, run_id: run.id };
}

/** The workspace's ART model `id` (any status), or null: another workspace's, another kind's or none. */
export async function findArtRun(db: DbOrTx, workspaceId: string, id: string): Promise<ArtRun | null> {
  const row = await db.run.findFirst({
    where: { id, workspaceId, kind: "art" },
    select: { id: true, status: true, attempt: true, baseModel: true, artClient: true },
  });
  const client = row ? readArtClient(row.artClient) : null;
  return row && client ? { id: row.id, status: row.status, attempt: row.attempt, baseModel: row.baseModel, client } : null;
}

/** The workspace's active (running or lost) ART models of that project and name: the newest is "the" model. */
export function activeModelNamed(workspaceId: string, project: string, name: string): Prisma.RunWhereInput {
  return { workspaceId, kind: "art", status: { in: ["running", "lost"] }, experiment: { name: project }, artClient: { path: ["name"], equals: name } };
}

/**
 * The client called about its run: it is alive. A run lost to the client's silence is running again
 * (lifecycle's recover), and a running one's last sign of life is now (what ART_CLIENT_SILENT_MS counts from).
 */
export async function clientCalled(db: Db, run: ArtRun): Promise<void> {
  if (run.status === "lost") await recoverRun(db, run.id);
  else if (run.status === "running") await recordSignOfLife(db, run.id, "running");
}

/** Serialises creations of one project's models across web processes (the lock ends with the transaction). */
async function lockProject(tx: Prisma.TransactionClient, workspaceId: string, project: string): Promise<void> {
  await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(${`art-model:${workspaceId}:${project}`}))::text AS locked`;
}

/**
 * POST /preview/models. `return_existing`: the newest active (running or lost) model of that project and
 * name is returned; otherwise one is created, and an active one of that name already there is a conflict
 * (409). A deleted (stopped) model's name can be used again: its history stays as the old run.
 */
export async function createArtModel(
  db: Db,
  caller: { workspaceId: string; workspaceSlug: string; userId: string; tokenId: string | null; tokenName: string | null },
  body: CreateModelBody & { project: string; name: string },
): Promise<CreateOutcome> {
  const configText = artExperimentFiles(body.project, body.base_model)["config.json"];
  const parsed = parseRunConfig(configText, "art");
  if (!parsed.ok) return { ok: false, status: 400, message: `base_model: ${parsed.diagnostics[0]?.message ?? "not a base model"}`, param: "base_model" };
  // A model no runner of the workspace serves could never train a step (nor be listed by /api/v1/models).
  const unserved = baseModelProblem("base_model", body.base_model, await servedModels(db, caller.workspaceId));
  if (unserved) return { ok: false, status: 400, message: unserved, param: "base_model" };
  const config: RunConfig = parsed.config;
  const client: ArtClientInfo = { entity: caller.workspaceSlug, project: body.project, name: body.name, tokenId: caller.tokenId, tokenName: caller.tokenName };

  const outcome = await db.$transaction(
    async (tx): Promise<CreateOutcome | { ok: true; run: ArtRun; created: boolean }> => {
      await lockProject(tx, caller.workspaceId, body.project);
      const existing = await tx.run.findFirst({
        where: activeModelNamed(caller.workspaceId, body.project, body.name),
        orderBy: { createdAt: "desc" },
        select: { id: true },
      });
      if (existing && !body.return_existing) {
        return { ok: false, status: 409, message: `name: model '${body.name}' already exists in project '${body.project}' (pass return_existing to use it)`, param: "name" };
      }
      if (existing) {
        const run = await findArtRun(tx, caller.workspaceId, existing.id);
        if (run) return { ok: true, run, created: false };
      }
      const { experimentId, versionId } = await ensureArtExperiment(tx, caller.workspaceId, body.project, body.base_model);
      const version = await tx.experimentVersion.findUniqueOrThrow({ where: { id: versionId }, select: { files: true } });
      const files = version.files as Record<string, string>;
      const agg = await tx.run.aggregate({ where: { workspaceId: caller.workspaceId }, _max: { number: true } });
      const id = newRunId();
      await createRunRecord(
        tx,
        {
          id,
          number: (agg._max.number ?? 0) + 1,
          workspaceId: caller.workspaceId,
          experimentId,
          versionId,
          createdById: caller.userId,
          kind: "art",
          config: config as Prisma.InputJsonValue,
          baseModel: body.base_model,
          seed: config.seed,
          codeHash: codeHash(files as never),
          tasksHash: tasksHash(files as never),
          artClient: client as unknown as Prisma.InputJsonValue,
        },
        { status: "running", noRunner: "art" },
      );
      return { ok: true, run: { id, status: "running", attempt: 1, baseModel: body.base_model, client }, created: true };
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
  if (!outcome.ok) return outcome;
  if ("model" in outcome) return outcome;
  const { run, created } = outcome;
  if (created) {
    announce(db, { runId: run.id, status: "running", error: null, lastSeq: 0, attempt: 1 });
    // The log's first event, as a runner's run starts: the page reads the model and config from it.
    const started = RunEvent.parse({
      run_id: run.id,
      seq: 1,
      ts: Date.now(),
      attempt: 1,
      type: "run.started",
      payload: { kind: "art", config, model: body.base_model, resumed_from_step: 0 },
    });
    await ingestAndEmit(db, run.id, [started], undefined, { expectLastSeq: 0 });
  } else {
    await clientCalled(db, run);
  }
  return { ok: true, model: modelView(run), created };
}
