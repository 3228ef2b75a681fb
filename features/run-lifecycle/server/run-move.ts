/**
 * Gives another runner what it needs to continue a run it never ran (or ran before a move away): the
 * run's newest RECORDED checkpoint and the run's event log as this database holds it.
 *
 * Why the recorded checkpoint and not the newest on disk: the database's log (seq 1..lastSeq) and that
 * checkpoint agree — every rollout the checkpoint was trained on is in the log before its checkpoint.saved
 * — so the new runner continues with step K+1 exactly as the old one would have; a step the old runner
 * trained but the web server never heard of is redone from checkpoint K with the same tasks and seeds,
 * replacing its partial record (ingest/projection.ts replaces a trajectory id by its latest attempt, steps upsert).
 *
 * The checkpoint travels (a) through the shared checkpoint folder (ROLLBOOK_SHARED_CHECKPOINT_DIR on both
 * runners: the new runner copies it from there), or (b) through both runners' APIs: the web server streams
 * the old runner's GET /checkpoints/<run>/<K>/state.tar.gz into the new runner's PUT. (b) is tried first
 * when the old runner answers; the new runner refuses the event log, naming the setting, when neither works.
 */
import { AppError, isAppError } from "@/server/errors";
import { runnerFetch, type RunnerHandle } from "@/server/runner-client";
import { rowToEvent } from "@/server/run-convert";
import type { Db } from "@/server/db-types";

/** How long the old runner gets to start sending a checkpoint (it may be gone: then the shared folder is the way). */
const OLD_RUNNER_TIMEOUT_MS = 10_000;
/** Events per database page while streaming the log to the new runner. */
const EVENT_PAGE = 2_000;

export type MoveResult = {
  checkpointStep: number;
  lastSeq: number;
  checkpointVia: "none" | "runner-api" | "shared-or-local";
  /** Side logs copied from the old runner (the token view's data); the shared folder carries them otherwise. */
  sideLogs: string[];
};

/** gpu-runner/src/loop/shared-checkpoints.ts SIDE_LOGS. */
const SIDE_LOGS = ["tokens.jsonl", "train-logprobs.jsonl"] as const;

/** Copy the run's side logs from the old runner when it answers (best effort: they only serve the token view). */
async function copySideLogs(db: Db, runId: string, fromRunnerId: string, to: RunnerHandle): Promise<string[]> {
  const copied: string[] = [];
  for (const name of SIDE_LOGS) {
    try {
      const from = await runnerFetch(db, fromRunnerId, `/runs/${encodeURIComponent(runId)}/logs/${name}`, { signal: AbortSignal.timeout(OLD_RUNNER_TIMEOUT_MS) });
      if (!from.ok || !from.body) {
        await from.body?.cancel();
        continue;
      }
      const put = await runnerFetch(db, to.id, `/runs/${encodeURIComponent(runId)}/logs/${name}`, { method: "PUT", body: from.body, duplex: "half" } as RequestInit);
      if (put.ok) copied.push(name);
      else await put.body?.cancel();
    } catch (e) {
      if (!isAppError(e) && !(e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError"))) throw e;
    }
  }
  return copied;
}

/** The runner's error body ({ error: { message } }) or its status line. */
async function runnerMessage(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const parsed = JSON.parse(text) as { error?: { message?: string } };
    if (parsed.error?.message) return parsed.error.message;
  } catch {
    // not JSON: the text itself
  }
  return text.slice(0, 500) || `HTTP ${res.status}`;
}

/** Copy checkpoint `step` from the old runner to the new one through their APIs; false when the old runner cannot give it. */
async function copyThroughApis(db: Db, runId: string, step: number, fromRunnerId: string, to: RunnerHandle): Promise<boolean> {
  let from: Response;
  try {
    from = await runnerFetch(db, fromRunnerId, `/checkpoints/${encodeURIComponent(runId)}/${step}/state.tar.gz`, {
      signal: AbortSignal.timeout(OLD_RUNNER_TIMEOUT_MS),
    });
  } catch (e) {
    if (isAppError(e) || (e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError"))) return false;
    throw e;
  }
  if (!from.ok || !from.body) {
    await from.body?.cancel();
    return false;
  }
  const put = await runnerFetch(db, to.id, `/runs/${encodeURIComponent(runId)}/checkpoints/${step}/state.tar.gz`, {
    method: "PUT",
    headers: { "content-type": "application/gzip" },
    body: from.body,
    duplex: "half",
  } as RequestInit);
  if (!put.ok) throw new AppError("RUNNER_ERROR", `runner '${to.name}' refused checkpoint ${step} of run ${runId}: ${await runnerMessage(put)}`);
  return true;
}

/** The run's stored events 1..lastSeq as NDJSON, page by page; a gap (a lost row) fails the stream. */
function eventLogStream(db: Db, runId: string, lastSeq: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let after = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (after >= lastSeq) return controller.close();
      const rows = await db.runEvent.findMany({ where: { runId, seq: { gt: after, lte: lastSeq } }, orderBy: { seq: "asc" }, take: EVENT_PAGE });
      if (rows.length === 0 || rows[0]!.seq !== after + 1) {
        return controller.error(new AppError("CONFLICT", `run ${runId}: the stored event log has no event ${after + 1}; it cannot be continued elsewhere`));
      }
      let text = "";
      for (const row of rows) {
        if (row.seq !== after + 1) return controller.error(new AppError("CONFLICT", `run ${runId}: the stored event log has no event ${after + 1}`));
        after = row.seq;
        text += JSON.stringify(rowToEvent(row)) + "\n";
      }
      controller.enqueue(encoder.encode(text));
    },
  });
}

/**
 * Prepare `to` to continue the run: its checkpoint (through the APIs when the old runner answers, else the
 * shared folder) and its event log. Throws an AppError that says what to set when the checkpoint cannot
 * reach the new runner.
 */
export async function moveRunTo(db: Db, run: { id: string; runnerId: string | null; lastSeq: number }, to: RunnerHandle): Promise<MoveResult> {
  const step = await newestRecordedCheckpoint(db, run.id);
  let via: MoveResult["checkpointVia"] = step === 0 ? "none" : "shared-or-local";
  if (step > 0 && run.runnerId && (await copyThroughApis(db, run.id, step, run.runnerId, to))) via = "runner-api";
  const sideLogs = via === "runner-api" || (step === 0 && run.runnerId) ? await copySideLogs(db, run.id, run.runnerId!, to) : [];
  const lastSeq = await putEventLog(db, run, step, to);
  return { checkpointStep: step, lastSeq, checkpointVia: via, sideLogs };
}

async function newestRecordedCheckpoint(db: Db, runId: string): Promise<number> {
  const newest = await db.checkpoint.findFirst({ where: { runId }, orderBy: { step: "desc" }, select: { step: true } });
  return newest?.step ?? 0;
}

/** PUT the stored log (1..lastSeq) to `to`, which continues from checkpoint `step`; returns the runner's last_seq. */
async function putEventLog(db: Db, run: { id: string; lastSeq: number }, step: number, to: RunnerHandle): Promise<number> {
  const put = await runnerFetch(db, to.id, `/runs/${encodeURIComponent(run.id)}/events.jsonl?checkpoint_step=${step}`, {
    method: "PUT",
    headers: { "content-type": "application/x-ndjson" },
    body: eventLogStream(db, run.id, run.lastSeq),
    duplex: "half",
  } as RequestInit);
  if (!put.ok) {
    const message = await runnerMessage(put);
    throw new AppError(put.status === 409 ? "CONFLICT" : "RUNNER_ERROR", `cannot resume run on runner '${to.name}': ${message}`);
  }
  return ((await put.json()) as { last_seq: number }).last_seq;
}

/**
 * The run's own runner lost lines of its log that this database holds (a crash before they reached its
 * disk, a wiped runs folder): it would number new events over stored ones, so it refuses the resume. Hand it
 * the stored log back, to continue from the newest recorded checkpoint (which it has: it wrote it). Returns
 * whether it had to.
 */
export async function handBackEventLog(db: Db, run: { id: string; lastSeq: number }, to: RunnerHandle): Promise<boolean> {
  const onRunner = (await to.status()).runs.find((r) => r.run_id === run.id);
  if ((onRunner?.last_seq ?? 0) >= run.lastSeq) return false;
  await putEventLog(db, run, await newestRecordedCheckpoint(db, run.id), to);
  return true;
}
