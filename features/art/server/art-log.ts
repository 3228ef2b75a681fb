/**
 * POST /preview/models/{id}/log: a call's trajectory groups become the run's events, through the same
 * ingestion the runner's events go through (ingestAndEmit: stored, projected into trajectories, steps,
 * counters and the runs table's summary, then sent to the run's socket room and the flags), so every view
 * works as for a scenario run, live.
 *
 *   split "train"  one step: rollout.finished per trajectory (a group's exceptions as failed rollouts),
 *                  then step.finished with the runner's own metrics (contracts computeStepMetrics);
 *                  the step is the run's current step + 1
 *   split "val"    an eval of the current step: rollout.finished (split val), then eval.finished
 *
 * The events are numbered after the run's lastSeq. Two calls at once must not share a seq: each stores its
 * batch only if lastSeq is still what it numbered from (ingestion's expectLastSeq, decided under the run's
 * row lock), and renumbers and tries again otherwise; calls in this process also queue per run, so they do
 * not race each other at all.
 */
import { computeEvalMetrics, computeStepMetrics, RunEvent, type Trajectory } from "@contracts";
import { ingestAndEmit } from "@/features/run-lifecycle/server";
import { createKeyedQueue } from "@/server/keyed-queue";
import type { Db } from "@/server/db-types";
import type { LogBody } from "../schema";
import type { ArtRun } from "./art-models";
import { rolloutsOf } from "./art-transcript";

/** Tries before a call gives up to concurrent writers (each retry means another call stored meanwhile). */
const MAX_TRIES = 50;

/** Runs `fn` after the calls for this run queued before it in this process. */
const queued = createKeyedQueue();

export interface LogOutcome {
  split: "train" | "val";
  step: number;
  rollouts: number;
  firstSeq: number;
  lastSeq: number;
}

/** The events of one log call, numbered from `lastSeq + 1`. Pure (exported for tests). */
export function logEvents(run: Pick<ArtRun, "id" | "attempt" | "baseModel">, body: LogBody, at: { lastSeq: number; currentStep: number; now: number }): { events: RunEvent[]; step: number; rollouts: number } {
  const step = body.split === "train" ? at.currentStep + 1 : at.currentStep;
  // The model that sampled is the client's business; for an eval, name the step evaluated as Rollbook names checkpoints.
  const model = body.split === "val" && step > 0 ? `${run.id}@${step}` : run.baseModel;
  const groups = rolloutsOf(body.trajectory_groups, { idPrefix: `art-${run.id}-${at.lastSeq + 1}`, step, split: body.split, model, now: at.now });
  const all: Trajectory[] = groups.flat();
  const raw: { type: RunEvent["type"]; payload: unknown }[] = all.map((t) => ({ type: "rollout.finished", payload: t }));
  if (body.split === "train") {
    // The client sampled and trained wherever it does: Rollbook measured none of the step's times (null, not 0 s).
    raw.push({ type: "step.finished", payload: computeStepMetrics(step, groups, null, { rolloutS: null, trainS: null, stepS: null }) });
  } else {
    raw.push({ type: "eval.finished", payload: computeEvalMetrics(step, model, all) });
  }
  const events = raw.map((e, i) => RunEvent.parse({ run_id: run.id, seq: at.lastSeq + 1 + i, ts: at.now, attempt: run.attempt, type: e.type, payload: e.payload }));
  return { events, step, rollouts: all.length };
}

/**
 * Append events to an ART run's log: `build` numbers them after the given lastSeq; stored only if lastSeq is
 * still that (see the file comment), rebuilt and tried again otherwise.
 */
export function appendEvents<T>(db: Db, runId: string, build: (at: { lastSeq: number; currentStep: number; attempt: number; now: number }) => { events: RunEvent[]; result: T }): Promise<T & { firstSeq: number; lastSeq: number }> {
  return queued(runId, async () => {
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const row = await db.run.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true, currentStep: true, attempt: true } });
      const built = build({ ...row, now: Date.now() });
      const res = await ingestAndEmit(db, runId, built.events, undefined, { expectLastSeq: row.lastSeq });
      if (res.conflict) continue;
      return { ...built.result, firstSeq: row.lastSeq + 1, lastSeq: res.lastSeq };
    }
    throw new Error(`run ${runId}: ${MAX_TRIES} concurrent writers got there first; try again`);
  });
}

/** Store one log call's events (see the file comment). */
export function logGroups(db: Db, run: ArtRun, body: LogBody): Promise<LogOutcome> {
  return appendEvents(db, run.id, (at) => {
    const built = logEvents({ ...run, attempt: at.attempt }, body, at);
    return { events: built.events, result: { split: body.split, step: built.step, rollouts: built.rollouts } };
  });
}

/** DELETE /preview/models/{id}: the log ends as a stopped run's does (run.finished), which the lifecycle applies. */
export function endRun(db: Db, runId: string): Promise<{ firstSeq: number; lastSeq: number }> {
  return appendEvents(db, runId, (at) => ({
    events: [RunEvent.parse({ run_id: runId, seq: at.lastSeq + 1, ts: at.now, attempt: at.attempt, type: "run.finished", payload: { status: "stopped", error: null, diagnostics: [] } })],
    result: {},
  }));
}
