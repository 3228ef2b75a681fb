/**
 * Server-test harness: a fresh Postgres database per test file (created, migrated, dropped), a tRPC
 * caller on it, and event fixtures. Needs the Postgres at TEST_DATABASE_URL
 * (default postgresql://postgres@127.0.0.1:5432/postgres).
 */
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { RunConfig, RunEvent, type ExperimentFiles, type Trajectory } from "@contracts";
import { openDatabase, type DbHandle } from "../db";
import { createPgDatabase, dropPgDatabase } from "../db-migrate";
import { createCaller } from "../routers/_app";
import { createContext } from "../trpc";
import type { Role } from "@contracts/roles";
import type { SessionUser } from "../auth/principal";
import { copyTemplateDb, TEMPLATE_ENV } from "./template-db";

const adminUrl = process.env.TEST_DATABASE_URL || "postgresql://postgres@127.0.0.1:5432/postgres";

export type TestDb = { handle: DbHandle; url: string; drop: () => Promise<void> };

export async function createTestDb(): Promise<TestDb> {
  const name = `rollbook_test_${process.pid}_${randomUUID().slice(0, 8)}`;
  // A copy of the run's migrated template where the server project's globalSetup made one (template-db.ts).
  const template = process.env[TEMPLATE_ENV];
  const url = template ? await copyTemplateDb(adminUrl, template, name) : await createPgDatabase(adminUrl, name);
  const handle = await openDatabase({ kind: "postgres", url });
  if (!template) await handle.migrate();
  return {
    handle,
    url,
    drop: async () => {
      await handle.close();
      await dropPgDatabase(adminUrl, name);
    },
  };
}

/** A workspace of its own, so tests never see each other's rows. */
export async function newWorkspace(db: DbHandle["prisma"]): Promise<string> {
  const slug = `ws-${randomUUID().slice(0, 12)}`;
  return (await db.workspace.create({ data: { slug, name: slug }, select: { id: true } })).id;
}

/** A user (a real row, no password) with `role` in the workspace; the workspace's owner is made once and reused. */
export async function userWithRole(db: DbHandle["prisma"], workspaceId: string, role: Role = "owner"): Promise<SessionUser> {
  if (role === "owner") {
    const existing = await db.membership.findFirst({ where: { workspaceId, role: "owner" }, select: { user: { select: { id: true, email: true, name: true } } } });
    if (existing) return existing.user;
  }
  const tag = randomUUID().slice(0, 8);
  return db.user.create({
    data: { email: `${role}-${tag}@test.local`, name: `${role} ${tag}`, memberships: { create: { workspaceId, role } } },
    select: { id: true, email: true, name: true },
  });
}

/** A tRPC caller acting as a user with `role` (default: the owner) in the workspace — through the real authorization. */
export async function callerAs(db: DbHandle["prisma"], workspaceId: string, opts: { role?: Role; runnerName?: string } = {}) {
  const user = await userWithRole(db, workspaceId, opts.role ?? "owner");
  return createCaller(
    createContext({ db, principal: { user, tokenWorkspaceId: null, via: "session" }, workspaceId, runnerName: opts.runnerName, source: "test" }),
  );
}

/**
 * The owner's caller, synchronously usable: resolves the owner on first call. (Most tests act as the owner;
 * the authorization matrix uses callerAs with each role.)
 */
export function callerFor(db: DbHandle["prisma"], workspaceId: string, runnerName?: string) {
  const ready = userWithRole(db, workspaceId, "owner");
  const lazyCtx = ready.then((user) =>
    createContext({ db, principal: { user, tokenWorkspaceId: null, via: "session" }, workspaceId, runnerName, source: "test" }),
  );
  // createCaller accepts a context factory: every call awaits the owner once.
  return createCaller(() => lazyCtx);
}

export function templateFiles(config?: Record<string, unknown>): ExperimentFiles {
  const dir = path.resolve(import.meta.dirname, "../../templates/say-the-word");
  const read = (f: string) => fs.readFileSync(path.join(dir, f), "utf8");
  const base = JSON.parse(read("config.json")) as Record<string, unknown>;
  return {
    "scenario.ts": read("scenario.ts"),
    "reward.ts": read("reward.ts"),
    "tasks.jsonl": read("tasks.jsonl"),
    "config.json": config ? JSON.stringify({ ...base, ...config }, null, 2) : read("config.json"),
  };
}

/** A port nothing listens on (bound, then released). */
export function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function trajectory(i: number, step: number, reward: number | null): Trajectory {
  return {
    id: `traj-${step}-${i}`,
    step,
    group: Math.floor(i / 2),
    task_index: i,
    split: "train",
    task: { word: `w${i}` },
    messages: [
      { role: "user", content: `say w${i}` },
      { role: "assistant", content: reward ? `w${i}` : "no" },
    ],
    reward,
    metrics: {},
    error: reward === null ? { kind: "thrown", message: "boom" } : null,
    model: "SmolLM2-135M-Instruct",
    tokens: { prompt: 10, completion: 3 },
    timings: { started_at: 1_700_000_000_000, duration_ms: 12, model_ms: 8 },
    logs: [],
  };
}

/** A whole small run's event log: started, 2 steps of 4 rollouts (one failing), a checkpoint, finished. */
export function runEvents(runId: string): RunEvent[] {
  const ts = 1_700_000_000_000;
  const evs: { type: RunEvent["type"]; payload: unknown }[] = [
    {
      type: "run.started",
      payload: {
        kind: "train",
        config: RunConfig.parse({}),
        model: "SmolLM2-135M-Instruct",
        resumed_from_step: 0,
      },
    },
  ];
  for (const step of [0, 1]) {
    for (let i = 0; i < 4; i++) evs.push({ type: "rollout.finished", payload: trajectory(i, step, i === 3 && step === 0 ? null : i % 2) });
    evs.push({
      type: "step.finished",
      payload: {
        step,
        reward_mean: 0.5,
        reward_std_within_group: 0.5,
        exception_rate: step === 0 ? 0.25 : 0,
        groups_trainable: 2,
        rollouts: 4,
        rollout_s: 1,
        train_s: 1,
        step_s: 2,
        tokens_per_s: 10,
        trainer: null,
      },
    });
    evs.push({ type: "checkpoint.saved", payload: { step, path: `runs/${runId}/checkpoints/${String(step).padStart(4, "0")}`, size_bytes: 1234 } });
  }
  evs.push({ type: "eval.finished", payload: { step: 2, model: `${runId}@2`, reward_mean: 0.75, reward_std: 0.1, exception_rate: 0, rollouts: 4 } });
  evs.push({ type: "run.finished", payload: { status: "completed", error: null, diagnostics: [] } });
  return evs.map((e, i) => RunEvent.parse({ ...e, run_id: runId, seq: i + 1, ts: ts + i }));
}

/** A Run row in `running` state for ingestion tests (no runner involved). */
export async function createRunningRun(db: DbHandle["prisma"], workspaceId: string): Promise<string> {
  const files = templateFiles();
  const exp = await db.experiment.create({
    data: {
      workspaceId,
      name: `exp-${randomUUID().slice(0, 8)}`,
      versions: { create: { number: 1, files, filesHash: randomUUID() } },
    },
    include: { versions: true },
  });
  const agg = await db.run.aggregate({ where: { workspaceId }, _max: { number: true } });
  const run = await db.run.create({
    data: {
      number: (agg._max.number ?? 0) + 1,
      workspaceId,
      experimentId: exp.id,
      versionId: exp.versions[0]!.id,
      kind: "train",
      status: "running",
      config: RunConfig.parse({}) as object,
      baseModel: "SmolLM2-135M-Instruct",
      seed: 42,
      codeHash: "c",
      tasksHash: "t",
      startedAt: new Date(),
    },
  });
  return run.id;
}
