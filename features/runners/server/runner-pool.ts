/**
 * The runner registry of a workspace: list (with live running/queued counts), register (the URL must
 * answer and accept the token BEFORE anything is saved), update (capacity, enabled), remove (refused while
 * it has active runs), and how a runner's answer or silence is recorded on its row (health, lastSeenAt,
 * device, models, capacity, notices) — shared by the heartbeat monitor and the dispatcher.
 */
import { RunnerNotice, type RunnerStatus } from "@contracts";
import { z } from "zod";
import { egressUrlProblem } from "@/gpu-runner/src/net/egress-check";
import { egressRefusalIn } from "@/gpu-runner/src/net/egress-policy";
import { env } from "@/server/env";
import { AppError, isAppError, rootMessage } from "@/server/errors";
import { normalizeRunnerUrl, registerRunner, runnerHandle, tokenHash, type RunnerHandle } from "@/server/runner-client";
import type { DbOrTx } from "@/server/db-types";
import { seesRunnerDetails, type RunnerViewer } from "./runner-visibility";

export const RUNNER_HEALTH = ["unknown", "healthy", "unreachable", "unauthorized", "error"] as const;
export type RunnerHealth = (typeof RUNNER_HEALTH)[number];

/** Runs that occupy a runner: running, lost (it may still run them), and queued ones claimed for it. */
export const OCCUPYING_STATUSES = ["running", "lost", "queued"] as const;

/** How a failed call reads as health: the runner refused our token, did not answer, or answered with an error. */
export function healthOfError(e: unknown): RunnerHealth {
  const msg = e instanceof Error ? e.message : String(e);
  if (/missing or wrong runner token|cannot read its token/.test(msg)) return "unauthorized";
  if (isAppError(e) && e.code === "RUNNER_UNAVAILABLE") return "unreachable";
  return "error";
}

/**
 * The runner answered: it is healthy — unless it says it cannot write its runs folder (disk full), which the
 * dispatcher must not send runs to: "error", with its reason for the runners page. What it says about itself
 * is stored (an admin's capacity wins). Returns the health recorded.
 */
export async function recordRunnerAnswer(db: DbOrTx, runnerId: string, status: RunnerStatus): Promise<RunnerHealth> {
  const row = await db.runner.findUnique({ where: { id: runnerId }, select: { capacityOverride: true } });
  const health: RunnerHealth = status.disk_error ? "error" : "healthy";
  if (!row) return health;
  await db.runner.update({
    where: { id: runnerId },
    data: {
      health,
      lastError: status.disk_error ?? null,
      lastSeenAt: new Date(),
      ...(status.device !== undefined ? { device: status.device } : {}),
      ...(status.models ? { models: status.models } : {}),
      // What it says now replaces what it said (an older runner sends none: it has none to show).
      notices: status.notices ?? [],
      ...(row.capacityOverride == null && status.capacity ? { capacity: status.capacity } : {}),
    },
  });
  return health;
}

/** A row's stored notices, read back through the contract: anything else in the column shows as none. */
const StoredNotices = z.array(RunnerNotice).catch([]);

export async function recordRunnerFailure(db: DbOrTx, runnerId: string, e: unknown): Promise<RunnerHealth> {
  const health = healthOfError(e);
  await db.runner.updateMany({ where: { id: runnerId }, data: { health, lastError: e instanceof Error ? e.message : String(e) } });
  return health;
}

/** The runners a workspace may use: its own and the instance's (workspaceId null). */
export const runnersOf = (workspaceId: string) => ({ OR: [{ workspaceId }, { workspaceId: null }] });

/**
 * What a caller may see of a runner. One runner serves every workspace: its run list is cut to the caller's
 * own runs (by the run ids this workspace owns in the database, never by what the runner says), and its
 * engine's health (memory, restart reasons with the engine's last output), its engine queue (every
 * workspace's model calls) and why its CPU share fell back (cgroup paths) only reach those who see the
 * runner's details (runner-visibility.ts: the instance's operator; a workspace's admins for its own runners).
 */
export async function runnerStatusFor(db: DbOrTx, workspaceId: string, status: RunnerStatus, opts: { details: boolean }): Promise<RunnerStatus> {
  const ids = status.runs.map((r) => r.run_id);
  const mine = new Set(
    ids.length === 0 ? [] : (await db.run.findMany({ where: { id: { in: ids }, workspaceId }, select: { id: true } })).map((r) => r.id),
  );
  const runs = status.runs.filter((r) => mine.has(r.run_id));
  if (opts.details) return { ...status, runs };
  const { engine_queue: _everyWorkspacesCalls, cpu_share, ...rest } = status;
  return {
    ...rest,
    runs,
    engine: { state: status.engine.state, restarts: status.engine.restarts, health: null, last_restart: null },
    // Its mode for everyone; why it fell back names the runner's cgroup paths.
    ...(cpu_share ? { cpu_share: { mode: cpu_share.mode } } : {}),
  };
}

/**
 * The runners a workspace may use, for its settings page. A row's address and error text (which names the
 * address) are null for a caller who does not see that runner's details (runner-visibility.ts).
 */
export async function listRunners(db: DbOrTx, viewer: RunnerViewer) {
  const { workspaceId } = viewer;
  const rows = await db.runner.findMany({
    where: runnersOf(workspaceId),
    orderBy: [{ workspaceId: { sort: "asc", nulls: "first" } }, { name: "asc" }],
    select: {
      id: true,
      name: true,
      url: true,
      workspaceId: true,
      device: true,
      models: true,
      capacity: true,
      enabled: true,
      health: true,
      lastSeenAt: true,
      lastError: true,
      notices: true,
    },
  });
  // This workspace's runs only: how busy a shared runner is with other workspaces' work is not theirs to see.
  const counts = await db.run.groupBy({
    by: ["runnerId", "status"],
    where: { workspaceId, runnerId: { in: rows.map((r) => r.id) }, status: { in: ["running", "lost"] } },
    _count: { _all: true },
  });
  const pinned = await db.run.groupBy({
    by: ["pinnedRunnerId"],
    where: { workspaceId, pinnedRunnerId: { in: rows.map((r) => r.id) }, status: "queued" },
    _count: { _all: true },
  });
  const waiting = await db.run.count({ where: { workspaceId, status: "queued", runnerId: null, pinnedRunnerId: null } });
  return rows.map((r) => {
    const details = seesRunnerDetails(r, viewer);
    return {
      ...r,
      url: details ? r.url : null,
      lastError: details ? r.lastError : null,
      // For every member (runner-visibility.ts): advice about the runner's setup, no address or secret in it.
      notices: StoredNotices.parse(r.notices),
      scope: r.workspaceId === null ? ("instance" as const) : ("workspace" as const),
      running: counts.filter((c) => c.runnerId === r.id).reduce((n, c) => n + c._count._all, 0),
      /** Runs waiting that must go here (forks/evals of its checkpoints), and the unpinned queue it may serve. */
      queued: (pinned.find((p) => p.pinnedRunnerId === r.id)?._count._all ?? 0) + (r.enabled ? waiting : 0),
    };
  });
}

/** The network-level failure under an error (refused, reset, unresolvable, TLS): there was no reply at all. */
function connectionFailure(e: unknown): Error | null {
  let cur: unknown = e;
  for (let depth = 0; cur instanceof Error && depth < 8; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && /^(E[A-Z]+|UND_ERR_[A-Z_]+|ERR_TLS_[A-Z_]+|(UNABLE|DEPTH|CERT|SELF)_[A-Z_]+)$/.test(code)) return cur;
    cur = cur.cause;
  }
  return null;
}

/**
 * Asks a runner at `url` with `token` for its status, as the workspace `workspaceId` would reach it (through
 * the egress policy). A wrong URL and a wrong token are told apart (the runner answers a wrong token with
 * UNAUTHORIZED) and named by field, for the register form. Whatever else answered is only said to be no
 * Rollbook runner: its reply is not repeated (the URL is the user's; what answers may be an internal service).
 */
export async function probeRunner(url: string, token: string, workspaceId: string): Promise<RunnerStatus> {
  const handle: RunnerHandle = runnerHandle({ id: "probe", name: "new runner", url, tokenHash: tokenHash(token), tokenCipher: null, workspaceId }, token);
  try {
    return await handle.status();
  } catch (e) {
    // The message starts with the field it is about: the register form shows it there.
    const refused = egressRefusalIn(e);
    if (refused) throw new AppError("BAD_INPUT", refused.message);
    if (healthOfError(e) === "unauthorized") throw new AppError("RUNNER_ERROR", `token: the runner at ${url} refused this token`);
    if (isAppError(e) && e.code === "RUNNER_UNAVAILABLE") {
      // Only a failure to connect (or no answer in time) is named; a reply that is not tRPC's JSON would be
      // quoted by the parse error's message, so it counts as "answered" below.
      const failure = connectionFailure(e);
      if (failure || e.cause === undefined) throw new AppError("RUNNER_UNAVAILABLE", `url: no runner answered at ${url} (${failure?.message ?? rootMessage(e)})`);
    }
    throw new AppError("RUNNER_ERROR", `url: ${url} answered, but it is not a Rollbook runner`);
  }
}

export async function registerWorkspaceRunner(
  db: DbOrTx,
  workspaceId: string,
  input: { name: string; url: string; token: string; capacity?: number },
) {
  const url = normalizeRunnerUrl(input.url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AppError("BAD_INPUT", `url: '${input.url}' is not a URL (e.g. http://gpu-box:4100)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new AppError("BAD_INPUT", `url: use http:// or https:// (got ${parsed.protocol})`);
  // Before anything is sent: an internal address is refused with its rule (the probe's connection is checked again).
  const refused = await egressUrlProblem(url, { field: "url", actor: "the web server", allow: env().EGRESS_ALLOW });
  if (refused) throw new AppError("BAD_INPUT", refused);
  const clash = await db.runner.findFirst({ where: { name: input.name, ...runnersOf(workspaceId) }, select: { id: true } });
  if (clash) throw new AppError("CONFLICT", `name: a runner named '${input.name}' is already registered`);
  // Checked before anything is saved: nothing is ever queued to a runner that cannot take runs.
  const status = await probeRunner(url, input.token, workspaceId);
  const row = await registerRunner(db, { name: input.name, url, token: input.token, workspaceId, capacity: input.capacity });
  await recordRunnerAnswer(db, row.id, status);
  return { id: row.id, name: row.name, url: row.url };
}

async function workspaceRunner(db: DbOrTx, workspaceId: string, id: string) {
  const row = await db.runner.findFirst({ where: { id, ...runnersOf(workspaceId) }, select: { id: true, workspaceId: true, name: true } });
  if (!row) throw new AppError("NOT_FOUND", `runner ${id} not found`);
  if (row.workspaceId === null) {
    throw new AppError("FORBIDDEN", `runner '${row.name}' is the instance's runner (set in the web server's environment): it cannot be changed here`);
  }
  return row;
}

export async function updateRunner(db: DbOrTx, workspaceId: string, input: { id: string; capacity?: number | null; enabled?: boolean }) {
  await workspaceRunner(db, workspaceId, input.id);
  await db.runner.update({
    where: { id: input.id },
    data: {
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      ...(input.capacity !== undefined ? { capacityOverride: input.capacity, ...(input.capacity ? { capacity: input.capacity } : {}) } : {}),
    },
  });
  return { ok: true as const };
}

export async function removeRunner(db: DbOrTx, workspaceId: string, id: string) {
  const row = await workspaceRunner(db, workspaceId, id);
  const active = await db.run.count({
    where: { OR: [{ runnerId: id }, { pinnedRunnerId: id }], status: { in: [...OCCUPYING_STATUSES] } },
  });
  if (active > 0) throw new AppError("CONFLICT", `runner '${row.name}' has ${active} active run${active === 1 ? "" : "s"}: stop them (or disable it and wait) first`);
  // Finished runs keep their history; they just no longer name a runner.
  await db.run.updateMany({ where: { runnerId: id }, data: { runnerId: null } });
  await db.runner.delete({ where: { id } });
  return { ok: true as const };
}
