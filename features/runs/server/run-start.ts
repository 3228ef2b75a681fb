/**
 * Starting a run: freeze an immutable snapshot (version + parsed config + hashes) into a Run and queue it
 * for the runner pool (dispatcher.ts). A run refused before it started (diagnostics) leaves no row.
 */
import { randomUUID } from "node:crypto";
import { parseRunConfig, type RunConfig, type Diagnostic, type ExperimentFiles, type RunKind } from "@contracts";
import type { Prisma } from "@/generated/prisma/client";
import { AppError, isAppError } from "@/server/errors";
import { runnerById, type RunnerHandle } from "@/server/runner-client";
import { announceQueued, createRunRecord } from "@/features/run-lifecycle/server";
import { runnersOf } from "@/features/runners/server";
import { checkFresh, codeHash, latestIfSame, tasksHash, withNumberRetry, writeVersion } from "@/features/experiments/server";
import { toDbKind } from "@/server/run-convert";
import type { Db, DbOrTx } from "@/server/db-types";
import { forkConfigDiagnostics, resolveFork, type ForkInput, type ResolvedFork } from "./run-fork";
import { resolveEvalModel } from "./eval-model";
import { runReferenceDiagnostics } from "@/features/workspace/server";

export type StartRunInput = {
  experimentId: string;
  files: ExperimentFiles;
  kind: RunKind;
  /** Eval runs: `<run>@<step>`; absent = the base model. */
  evalModel?: string;
  /** Fork or re-run of a run (run-fork.ts): recorded as the new run's parent. */
  fork?: ForkInput;
  /** The version the editor loaded: a newer version with other files refuses the start (stale tab, CONFLICT). */
  baseVersion?: number;
};

export type StartRunResult =
  | { ok: true; runId: string; /** The version the run ran (new, or the latest when the files equal it). */ versionNumber: number }
  /** Refused before starting (no run created), or created and failed at once (runId set, status failed). */
  | { ok: false; diagnostics: Diagnostic[]; error: string; runId?: string };

const isError = (d: Diagnostic) => (d.severity ?? "error") === "error";

/** Run ids are made here, before the runner is asked, so a refused start leaves no row behind. */
const newRunId = () => `r${randomUUID().replace(/-/g, "")}`;

function summarize(diagnostics: Diagnostic[]): string {
  const errors = diagnostics.filter(isError);
  const first = errors[0];
  if (!first) return "refused";
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return `${first.file}:${first.line}:${first.column}: ${first.message}${more}`;
}

async function nextRunNumber(tx: DbOrTx, workspaceId: string): Promise<number> {
  const agg = await tx.run.aggregate({ where: { workspaceId }, _max: { number: true } });
  return (agg._max.number ?? 0) + 1;
}

/**
 * Start a run: a stale tab (`baseVersion` older than a latest version with other files) is refused first;
 * config.json is checked here (the shared parser: a broken config needs no runner to be refused); then a
 * runner validates and type-checks everything once, or refuses with diagnostics — and then neither a run
 * row nor a version exists. An accepted start writes the files as (or matches them to) an immutable
 * version and a `queued` run row pointing at it, in one transaction, and returns at once: the dispatcher
 * (dispatcher.ts) gives it to a runner with room. Forks and evals of a checkpoint are pinned to the runner
 * that holds it. No runner answering at all is a failed start (see failedStart).
 */
export async function startRun(
  db: Db,
  workspaceId: string,
  getRunner: () => Promise<RunnerHandle>,
  input: StartRunInput,
  opts: { createdById?: string | null; runnerById?: (runnerId: string) => Promise<RunnerHandle> } = {},
): Promise<StartRunResult> {
  const exp = await db.experiment.findFirst({ where: { id: input.experimentId, workspaceId }, select: { id: true } });
  if (!exp) throw new AppError("NOT_FOUND", `experiment ${input.experimentId} not found`);
  // An ART run has no runner: its client logs its steps. Only the ART API (features/art) creates one.
  if (input.kind === "art") {
    throw new AppError("BAD_INPUT", 'kind: "art" runs are created by an OpenPipe ART client through /api/art/v1 (docs/art.md), not started here');
  }
  if (input.kind === "tinker") {
    throw new AppError("BAD_INPUT", 'kind: "tinker" runs are created by a Tinker SDK client through /api/tinker (docs/tinker.md), not started here');
  }
  if (input.kind !== "eval" && input.evalModel) {
    throw new AppError("BAD_INPUT", "evalModel is only for eval runs");
  }
  // A fork is checked before anything is written; it may pick the eval model and the runner (its checkpoints').
  const fork: ResolvedFork | null = input.fork ? await resolveFork(db, workspaceId, { kind: input.kind, evalModel: input.evalModel, fork: input.fork }) : null;
  if (fork?.evalModel) input = { ...input, evalModel: fork.evalModel };
  if (fork?.runnerId) {
    const byId = opts.runnerById;
    if (!byId) throw new Error("startRun: a fork from a checkpoint needs opts.runnerById");
    const runnerId = fork.runnerId;
    getRunner = () => byId(runnerId);
  }

  // Stale tab: refused before anything else (checked again when the version is written).
  await checkFresh(db, input.experimentId, input.files, input.baseVersion);
  const parsed = parseRunConfig(input.files["config.json"], input.kind);
  if (!parsed.ok) return { ok: false, diagnostics: parsed.diagnostics, error: summarize(parsed.diagnostics) };
  const config = parsed.config;
  const forkProblems = fork ? forkConfigDiagnostics(fork, input.kind, config, input.files["config.json"]) : [];
  if (forkProblems.length > 0) return { ok: false, diagnostics: forkProblems, error: summarize(forkProblems) };
  // Registered MCP servers, secrets and checkpoints the config names must be this workspace's.
  const referenceProblems = await runReferenceDiagnostics(db, workspaceId, config, input.files["config.json"]);
  if (referenceProblems.length > 0) return { ok: false, diagnostics: referenceProblems, error: summarize(referenceProblems) };
  let pinnedEval: string | null = null;
  if (input.kind === "eval" && input.evalModel && !fork) {
    const target = await resolveEvalModel(db, workspaceId, input.evalModel, config.model);
    input = { ...input, evalModel: target.model };
    const byId = opts.runnerById;
    // The checkpoint lives on the runner of the run that saved it: the eval goes there (and only there).
    if (target.runnerId && byId) {
      const runnerId = target.runnerId;
      pinnedEval = runnerId;
      getRunner = () => byId(runnerId);
    }
  }
  const runId = newRunId();
  const pinnedRunnerId = fork?.runnerId ?? pinnedEval;

  const createRow = (status: "queued" | "failed", error: string | null, versionId: string | null, runnerId: string | null = null, preferredRunnerId: string | null = null) =>
    createRunRow(db, { id: runId, workspaceId, input, versionId, runnerId, pinnedRunnerId, preferredRunnerId, config, status, error, createdById: opts.createdById ?? null, fork });
  // A start that never reached a runner writes no version. Its failed row (why no runner could check it)
  // is kept only when the files already are the latest version; otherwise the editor shows the reason and
  // the user's text stays unsaved there, as it was.
  const failedStart = async (runnerId: string | null, error: string): Promise<StartRunResult> => {
    const same = await latestIfSame(db, input.experimentId, input.files);
    if (!same) return { ok: false, diagnostics: [], error };
    await createRow("failed", error, same.versionId, runnerId);
    return { ok: false, runId, diagnostics: [], error };
  };

  // Checked (compiled, type-checked, tasks parsed) by a runner now, so a broken start is refused with no
  // row; the dispatcher then gives the run to whichever runner has room.
  let checked: { diagnostics: Diagnostic[]; runnerId: string };
  try {
    checked = await validateOnAnyRunner(db, workspaceId, getRunner, input, pinnedRunnerId !== null);
  } catch (e) {
    if (!isAppError(e) || e.code !== "RUNNER_UNAVAILABLE") throw e;
    return failedStart(null, e.message);
  }
  const { diagnostics } = checked;
  if (diagnostics.some(isError)) return { ok: false, diagnostics, error: summarize(diagnostics) };

  // Accepted: the version (new, or the latest when equal) and the queued run row in one transaction.
  const versionNumber = await createRow("queued", null, null, null, checked.runnerId);
  announceQueued(db, runId);
  return { ok: true, runId, versionNumber };
}

/**
 * The runner the start names (a checkpoint's runner for forks and evals of it, else the context's) checks
 * the files; when it does not answer, any other healthy runner the workspace may use (never for a pinned
 * run: only its runner has the checkpoint). Throws RUNNER_UNAVAILABLE when none answers.
 */
async function validateOnAnyRunner(
  db: Db,
  workspaceId: string,
  first: () => Promise<RunnerHandle>,
  input: StartRunInput,
  pinned: boolean,
): Promise<{ diagnostics: Diagnostic[]; runnerId: string }> {
  let firstError: unknown;
  let tried: string | null = null;
  try {
    const runner = await first();
    tried = runner.id;
    return { diagnostics: await runner.validate({ files: input.files, kind: input.kind }), runnerId: runner.id };
  } catch (e) {
    if (!isAppError(e) || e.code !== "RUNNER_UNAVAILABLE" || pinned) throw e;
    firstError = e;
  }
  const others = await db.runner.findMany({
    where: { enabled: true, health: "healthy", ...(tried ? { id: { not: tried } } : {}), ...runnersOf(workspaceId) },
    select: { id: true },
  });
  for (const o of others) {
    try {
      return { diagnostics: await (await runnerById(db, o.id)).validate({ files: input.files, kind: input.kind }), runnerId: o.id };
    } catch (e) {
      if (!isAppError(e) || e.code !== "RUNNER_UNAVAILABLE") throw e;
    }
  }
  throw firstError;
}

/**
 * Writes the run row; with `versionId` null (an accepted start), first writes its files as a version in the
 * same transaction. Why here and not before asking the runner: a start the runner refuses must leave no
 * version, and writing it only once accepted (one transaction, retried whole on a lost number race) cannot
 * leave half-written rows — unlike saving first and deleting the version after a refusal, which would race
 * with a concurrent save that deduplicated onto that very version. Returns the run's version number.
 */
async function createRunRow(
  db: Db,
  r: {
    id: string;
    workspaceId: string;
    input: StartRunInput;
    versionId: string | null;
    runnerId: string | null;
    pinnedRunnerId: string | null;
    preferredRunnerId: string | null;
    config: RunConfig;
    status: "queued" | "failed";
    error: string | null;
    createdById: string | null;
    fork: ResolvedFork | null;
  },
): Promise<number> {
  // Two starts (or a start and a save) racing for the same number: the whole transaction runs again.
  return withNumberRetry(() =>
    db.$transaction(async (tx) => {
      const version = r.versionId
        ? await tx.experimentVersion.findUniqueOrThrow({ where: { id: r.versionId }, select: { id: true, number: true } })
        : await writeVersion(tx, r.input.experimentId, r.input.files, { baseVersion: r.input.baseVersion, createdById: r.createdById }).then((v) => ({
            id: v.versionId,
            number: v.number,
          }));
      const number = await nextRunNumber(tx, r.workspaceId);
      await createRunRecord(
        tx,
        {
          id: r.id,
          number,
          workspaceId: r.workspaceId,
          experimentId: r.input.experimentId,
          versionId: version.id,
          runnerId: r.runnerId,
          pinnedRunnerId: r.pinnedRunnerId,
          preferredRunnerId: r.preferredRunnerId,
          initFrom: r.fork?.initFrom ? (r.fork.initFrom as unknown as Prisma.InputJsonValue) : undefined,
          createdById: r.createdById,
          kind: toDbKind(r.input.kind),
          config: r.config as unknown as Prisma.InputJsonValue,
          baseModel: r.config.model,
          seed: r.config.seed,
          evalModel: r.input.evalModel ?? null,
          parentRunId: r.fork?.parentRunId ?? null,
          parentStep: r.fork?.parentStep ?? null,
          codeHash: codeHash(r.input.files),
          tasksHash: tasksHash(r.input.files),
        },
        r.status === "failed" ? { status: "failed", error: r.error ?? "the start failed" } : { status: "queued" },
      );
      return version.number;
    }),
  );
}
