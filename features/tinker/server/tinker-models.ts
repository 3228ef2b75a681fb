/**
 * Tinker models are Rollbook runs of kind "tinker": `create_model` (the SDK's create_lora_training_client)
 * makes a `running` run through the lifecycle, in an experiment named by the model's (or the session's)
 * user_metadata "project" (default "tinker"), named by its user_metadata "name" (or the session's display
 * name). Who drives it is kept on the run (Run.artClient: the same client info an ART run keeps, shown in
 * the run page's header as "Tinker client, token …"). Every lookup is inside the caller's workspace.
 *
 * Sessions (create_session, session_heartbeat) are kept in this process's memory: they carry only the
 * display name, tags and metadata a model created in them inherits; a heartbeat is the client being alive.
 */
import { randomUUID } from "node:crypto";
import { parseRunConfig, RunEvent, type ExperimentFiles, type RunConfig } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { announce, createRunRecord, ingestAndEmit, recordSignOfLife, recoverRun } from "@/features/run-lifecycle/server";
import { codeHash, tasksHash } from "@/features/experiments/server";
import { baseModelProblem, servedModels } from "@/features/runners/server";
import { ensureClientExperiment } from "@/features/art/server";
import { readArtClient, type ArtClientInfo } from "@/features/art/schema";
import type { Db, DbOrTx } from "@/server/db-types";
import { TinkerUserError } from "./tinker-futures";

export interface TinkerRun {
  id: string;
  number: number;
  status: string;
  baseModel: string;
  loraRank: number;
  seed: number;
  client: ArtClientInfo;
}

interface Session {
  workspaceId: string;
  displayName: string | null;
  userMetadata: Record<string, unknown>;
  lastSeen: number;
}

const SESSION_TTL_MS = 24 * 60 * 60_000;
const sessions = new Map<string, Session>();

export function createSession(workspaceId: string, body: { display_name?: string | null; user_metadata?: Record<string, unknown> | null }): string {
  const now = Date.now();
  for (const [id, s] of sessions) if (now - s.lastSeen > SESSION_TTL_MS) sessions.delete(id);
  const id = `tses_${randomUUID().replace(/-/g, "")}`;
  sessions.set(id, { workspaceId, displayName: body.display_name ?? null, userMetadata: body.user_metadata ?? {}, lastSeen: now });
  return id;
}

/** The session, if it is this workspace's and still known (a web restart forgets sessions: models stay). */
export function touchSession(workspaceId: string, id: string): Session | null {
  const s = sessions.get(id);
  if (!s || s.workspaceId !== workspaceId) return null;
  s.lastSeen = Date.now();
  return s;
}

const LORA_RANK_MAX = 256;
const DEFAULT_PROJECT = "tinker";

function tinkerExperimentFiles(project: string, baseModel: string, loraRank: number): ExperimentFiles {
  const note = `// This experiment's runs are driven by a Tinker SDK client (project "${project}"): its training loop,\n// rewards and code live with the client. See docs/tinker.md.\n`;
  return {
    "scenario.ts": `${note}export default async function scenario() {\n  throw new Error("a Tinker project's rollouts are sampled by its Tinker client's loop, not by Rollbook's runner");\n}\n`,
    "reward.ts": `${note}export default function reward() {\n  return 0;\n}\n`,
    "tasks.jsonl": "",
    "config.json": `${JSON.stringify({ model: baseModel, trainer: { lora_rank: loraRank } }, null, 2)}\n`,
  };
}

const text = (v: unknown, max: number): string | null => (typeof v === "string" && v.trim() ? v.trim().slice(0, max) : null);

/**
 * The workspace's Tinker model `id` (any status), or null: another workspace's, another kind's or none. `id` is
 * the run's id, or the id the SDK derived for a model its load created (`<session>:train:<seq>`, kept as
 * Run.artClient.modelId).
 */
export async function findTinkerRun(db: DbOrTx, workspaceId: string, id: string): Promise<TinkerRun | null> {
  const row = await db.run.findFirst({
    where: { workspaceId, kind: "tinker", OR: [{ id }, { artClient: { path: ["modelId"], equals: id } }] },
    select: { id: true, number: true, status: true, baseModel: true, seed: true, config: true, artClient: true },
  });
  const client = row ? readArtClient(row.artClient) : null;
  if (!row || !client) return null;
  const rank = (row.config as { trainer?: { lora_rank?: unknown } } | null)?.trainer?.lora_rank;
  return { id: row.id, number: row.number, status: row.status, baseModel: row.baseModel, seed: row.seed, loraRank: typeof rank === "number" ? rank : 8, client };
}

/** The active model, or a user error naming model_id (a stopped model's history stays; it trains no more). */
export async function activeTinkerRun(db: Db, workspaceId: string, id: string): Promise<TinkerRun> {
  const run = await findTinkerRun(db, workspaceId, id);
  if (!run) throw new TinkerUserError(`model_id: model ${id} not found`, "model_id");
  if (run.status === "lost") await recoverRun(db, run.id);
  else if (run.status === "running") await recordSignOfLife(db, run.id, "running");
  else throw new TinkerUserError(`model_id: model ${id} has ended (its run is ${run.status}; its history stays in Rollbook)`, "model_id");
  return run;
}

async function lockProject(tx: Prisma.TransactionClient, workspaceId: string, project: string): Promise<void> {
  // The same lock key as ART's (art-models.ts): an experiment name is one namespace whichever door creates it.
  await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(${`art-model:${workspaceId}:${project}`}))::text AS locked`;
}

export interface CreateModelInput {
  baseModel: string;
  loraRank: number;
  seed: number | null;
  userMetadata: Record<string, unknown>;
  session: Session | null;
  /** The id the client calls the model by when it is not the run's (a model created by a load: the SDK's own). */
  modelId?: string;
}

/** create_model: a new running run of kind tinker. Refusals are TinkerUserError naming the field. */
export async function createTinkerModel(
  db: Db,
  caller: { workspaceId: string; workspaceSlug: string; userId: string; tokenId: string | null; tokenName: string | null },
  input: CreateModelInput,
): Promise<TinkerRun> {
  if (!Number.isInteger(input.loraRank) || input.loraRank < 1 || input.loraRank > LORA_RANK_MAX) throw new TinkerUserError(`lora_config.rank: must be an integer from 1 to ${LORA_RANK_MAX}`, "lora_config.rank");
  const unserved = baseModelProblem("base_model", input.baseModel, await servedModels(db, caller.workspaceId));
  if (unserved) throw new TinkerUserError(unserved, "base_model");
  const project = text(input.userMetadata.project, 200) ?? text(input.session?.userMetadata.project, 200) ?? DEFAULT_PROJECT;
  const files = tinkerExperimentFiles(project, input.baseModel, input.loraRank);
  const parsed = parseRunConfig(files["config.json"]!, "tinker");
  if (!parsed.ok) throw new TinkerUserError(`base_model: ${parsed.diagnostics[0]?.message ?? "not a base model"}`, "base_model");
  const config: RunConfig = { ...parsed.config, ...(input.seed !== null ? { seed: input.seed } : {}) };

  const run = await db.$transaction(
    async (tx) => {
      await lockProject(tx, caller.workspaceId, project);
      const { experimentId, versionId } = await ensureClientExperiment(tx, caller.workspaceId, project, files, `Tinker project "${project}" (its Tinker client's loop trains its runs: docs/tinker.md).`);
      const version = await tx.experimentVersion.findUniqueOrThrow({ where: { id: versionId }, select: { files: true } });
      const versionFiles = version.files as Record<string, string>;
      const agg = await tx.run.aggregate({ where: { workspaceId: caller.workspaceId }, _max: { number: true } });
      const number = (agg._max.number ?? 0) + 1;
      const name = text(input.userMetadata.name, 200) ?? input.session?.displayName ?? `tinker-${number}`;
      const client: ArtClientInfo = { entity: caller.workspaceSlug, project, name, tokenId: caller.tokenId, tokenName: caller.tokenName };
      const stored = input.modelId ? { ...client, modelId: input.modelId } : client;
      const id = `r${randomUUID().replace(/-/g, "")}`;
      await createRunRecord(
        tx,
        {
          id,
          number,
          workspaceId: caller.workspaceId,
          experimentId,
          versionId,
          createdById: caller.userId,
          kind: "tinker",
          config: config as Prisma.InputJsonValue,
          baseModel: input.baseModel,
          seed: config.seed,
          codeHash: codeHash(versionFiles as never),
          tasksHash: tasksHash(versionFiles as never),
          artClient: stored as unknown as Prisma.InputJsonValue,
        },
        { status: "running", noRunner: "tinker" },
      );
      return { id, number, status: "running", baseModel: input.baseModel, loraRank: input.loraRank, seed: config.seed, client } satisfies TinkerRun;
    },
    { timeout: 30_000, maxWait: 10_000 },
  );
  announce(db, { runId: run.id, status: "running", error: null, lastSeq: 0, attempt: 1 });
  // The log's first event, as a runner's run starts: the page reads the model and config from it.
  const started = RunEvent.parse({ run_id: run.id, seq: 1, ts: Date.now(), attempt: 1, type: "run.started", payload: { kind: "tinker", config, model: input.baseModel, resumed_from_step: 0 } });
  await ingestAndEmit(db, run.id, [started], undefined, { expectLastSeq: 0 });
  return run;
}
