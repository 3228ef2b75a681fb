/**
 * Liveness: the one owner of "is this run's runner alive, is this run lost". Every verdict on a run whose
 * runner went quiet is made here — lost (running → lost since its last sign of life), back (lost → running),
 * gone (failed: "runner lost the run"), failed on a full disk (the runner's reason), a stop recorded while
 * the runner was unreachable sent to it once it answers, a moved run's old copy stopped — with the
 * lifecycle's transitions (../lifecycle), so "lost" means the same wherever it comes from.
 *
 * Two loops hand it what they see, and stay two loops on purpose (merging them would change who asks, how
 * often and what "silent since" means):
 *   - the heartbeat (./heartbeat.ts, RunnerHeartbeat) asks every enabled runner every HEARTBEAT_MS, in every
 *     web process (idempotent writes, so a dead process cannot stop it), and records the runner's health;
 *     a runner silent for RUNNER_LOST_AFTER_MS since its last answer has its running runs lost since that
 *     answer (`runnerSilent`);
 *   - ingestion's scan (../ingest/service.ts, every scanMs) asks about the runs whose ingest lease this
 *     process holds and that sent nothing for RUNNER_LOST_AFTER_MS (`checkRuns`): only a run-level check
 *     sees the run's own last sign of life (its events), whether the runner still has the run, and what it
 *     says about it — and only the lease holder should act on that, not N processes at once.
 */
import { isActiveStatus, type RunnerStatus, type RunStatus } from "@contracts";
import type { RunnerHandle } from "@/server/runner-client";
import { closeAttempt, failRun, loseRun, recordSignOfLife, recoverRun } from "../lifecycle";
import type { Db } from "@/server/db-types";

/** A run ingestion looks after: an active one, or an ended one whose runner may still be logging its attempt. */
export type FollowedRun = {
  id: string;
  status: RunStatus;
  lastSeq: number;
  runnerId: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  lastHeartbeatAt: Date | null;
  lostSince: Date | null;
  attempt: number;
  attemptOpen: boolean;
};

/** What the checks need of ingestion's follower of a run (ingest/follower.ts). */
export interface FollowedStream {
  /** When its last event arrived (0 = none yet). */
  readonly lastActivity: number;
  /** Stop following: nothing more can come. */
  close(): void;
  /** The runner answers again: reconnect now. */
  kick(): void;
}

export interface LivenessOptions {
  /** RUNNER_LOST_AFTER_MS: how long a runner (heartbeat) or a run (scan) may stay silent before it is asked about. */
  lostAfterMs: number;
  runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  log: (msg: string) => void;
}

/** How long after a Stop recorded while the runner was unreachable the scan still tells the runner to stop it. */
const STOP_LATER_WINDOW_MS = 24 * 3600_000;

/** Longer than runs.start's validate + start timeouts (60 s each) together. */
const QUEUED_LOST_AFTER_MS = 180_000;

export class LivenessSupervisor {
  constructor(
    private readonly db: Db,
    private readonly opts: LivenessOptions,
    /** The runs this process follows (ingestion's followers, by run id); none for the heartbeat. */
    private readonly followers: ReadonlyMap<string, FollowedStream> = new Map(),
  ) {}

  /**
   * The heartbeat's verdict: a runner that has not answered since `lastSign` (its last answer, or when the
   * heartbeat began watching) for RUNNER_LOST_AFTER_MS has its running runs marked lost since then.
   */
  async runnerSilent(runner: { id: string; name: string }, health: string, lastSign: number): Promise<void> {
    const now = Date.now();
    if (now - lastSign < this.opts.lostAfterMs) return;
    const running = await this.db.run.findMany({ where: { runnerId: runner.id, status: "running" }, select: { id: true } });
    for (const run of running) {
      await this.lose(run.id, lastSign, `run ${run.id}: runner '${runner.name}' ${health} for ${Math.round((now - lastSign) / 1000)} s; marked lost`);
    }
  }

  /**
   * The scan's verdict over the runs this process follows (and runs with no runner): the quiet ones are
   * checked with their runner (lost, back, or gone); a runner that answers again is told to stop runs that
   * were stopped while it was not, and the old copies of runs moved off it.
   */
  async checkRuns(followed: FollowedRun[]): Promise<void> {
    const now = Date.now();
    const active = followed.filter((r) => isActiveStatus(r.status));
    // Ended here (stopped while the runner was unreachable, …) while the runner may still run the attempt.
    const openEnded = followed.filter((r) => !isActiveStatus(r.status) && r.attemptOpen && r.runnerId);
    const quiet = active.filter((r) => {
      if (r.status === "lost") return true; // asked every scan until the runner answers
      const last = this.lastSignOfLife(r);
      // A queued run may still be inside runs.start (validate + start can take minutes on a busy runner).
      const threshold = r.status === "queued" ? Math.max(this.opts.lostAfterMs, QUEUED_LOST_AFTER_MS) : this.opts.lostAfterMs;
      return now - last > threshold;
    });
    const byRunner = new Map<string, FollowedRun[]>();
    for (const r of quiet) {
      // A queued run without a runner is waiting in the queue (features/run-lifecycle/server/dispatcher.ts): not lost.
      if (r.status === "queued" && !r.runnerId) continue;
      if (!r.runnerId) {
        await failRun(this.db, r.id, "no runner was assigned to the run");
        continue;
      }
      byRunner.set(r.runnerId, [...(byRunner.get(r.runnerId) ?? []), r]);
    }
    const ask: FollowedRun[] = [];
    for (const r of openEnded) {
      // A runner gone for a day is not coming back with that attempt: stop waiting for its end.
      if (r.finishedAt && now - r.finishedAt.getTime() > STOP_LATER_WINDOW_MS) await closeAttempt(this.db, r.id, r.attempt);
      else ask.push(r);
    }
    for (const r of ask) if (!byRunner.has(r.runnerId!)) byRunner.set(r.runnerId!, []);
    // Runners a resume moved runs away from: one that comes back may still be running them.
    const movedAway = await this.db.run.findMany({ where: { movedFromRunnerId: { not: null } }, select: { id: true, movedFromRunnerId: true } });
    for (const r of movedAway) if (!byRunner.has(r.movedFromRunnerId!)) byRunner.set(r.movedFromRunnerId!, []);

    for (const [runnerId, runs] of byRunner) {
      let runner: RunnerHandle;
      let reported: RunnerStatus["runs"];
      try {
        runner = await this.opts.runnerFor(runnerId);
        reported = (await runner.status()).runs;
      } catch (e) {
        // No answer: its quiet runs are lost (not failed: they may be fine and resume when it is back).
        const why = e instanceof Error ? e.message : String(e);
        for (const r of runs) await this.markLost(r, why);
        continue;
      }
      const known = new Map(reported.map((r) => [r.run_id, r]));
      for (const r of runs) {
        const reported = known.get(r.id);
        if (reported && (await this.recordUnloggedFailure(r, reported))) continue;
        if (reported) {
          await this.markAnswering(r, reported);
          continue;
        }
        if (await failRun(this.db, r.id, "runner lost the run (it no longer knows it, and no events arrived)")) {
          this.opts.log(`run ${r.id}: runner lost the run`);
        }
        this.followers.get(r.id)?.close();
      }
      for (const r of ask) {
        if (r.runnerId !== runnerId) continue;
        const there = known.get(r.id);
        // Nothing more can come from a runner that does not have the run: the attempt is over.
        if (!there) {
          await closeAttempt(this.db, r.id, r.attempt);
          this.followers.get(r.id)?.close();
          continue;
        }
        // Ended here, still running there: stop that attempt now (a newer one, resumed since, is left alone).
        // Its events until it stops are still stored: the attempt stays open until its run.finished.
        if (there.status === "running" && (there.attempt ?? 1) === r.attempt) {
          this.opts.log(`run ${r.id}: ${r.status} here while its runner was unreachable; telling the runner to stop attempt ${r.attempt}`);
          await runner.stop(r.id, r.attempt).catch((e: unknown) => this.opts.log(`run ${r.id}: stop failed: ${e instanceof Error ? e.message : String(e)}`));
        }
        this.followers.get(r.id)?.kick();
      }
      await this.stopMovedAway(runner, known, movedAway);
    }
  }

  /**
   * The runner answers: runs moved off it that it still runs are stopped there (their events are not
   * ingested anyway: ingestion reads only from the run's current runner), then it is forgotten as theirs.
   */
  private async stopMovedAway(runner: RunnerHandle, known: Map<string, RunnerStatus["runs"][number]>, movedAway: { id: string; movedFromRunnerId: string | null }[]): Promise<void> {
    for (const r of movedAway) {
      if (r.movedFromRunnerId !== runner.id) continue;
      if (known.get(r.id)?.status === "running") {
        this.opts.log(`run ${r.id}: was resumed on another runner; telling runner '${runner.name}' to stop its old copy`);
        try {
          await runner.stop(r.id);
        } catch (e) {
          this.opts.log(`run ${r.id}: stop failed: ${e instanceof Error ? e.message : String(e)}`);
          continue; // asked again next scan
        }
      }
      await this.db.run.updateMany({ where: { id: r.id, movedFromRunnerId: runner.id }, data: { movedFromRunnerId: null } });
    }
  }

  /**
   * ART runs (features/art) have no runner to ask: a running one whose client has sent nothing for
   * `silentMs` (ART_CLIENT_SILENT_MS) is lost since its last call, saying so; the client's next call makes it
   * running again (features/art/server/art-run-access.ts). Idempotent: any process may make it.
   */
  async artClientsSilent(silentMs: number): Promise<void> {
    const quiet = await this.db.run.findMany({
      where: { kind: { in: ["art", "tinker"] }, status: "running", lastHeartbeatAt: { lt: new Date(Date.now() - silentMs) } },
      select: { id: true, kind: true, lastHeartbeatAt: true },
    });
    for (const r of quiet) {
      const since = r.lastHeartbeatAt!;
      const note = `the ${r.kind === "tinker" ? "Tinker" : "ART"} client has sent nothing since ${since.toISOString()}`;
      if (await loseRun(this.db, r.id, since, { note })) this.opts.log(`run ${r.id}: ${note}; marked lost`);
    }
  }

  private lastSignOfLife(r: FollowedRun): number {
    const follower = this.followers.get(r.id);
    return Math.max(r.lastHeartbeatAt?.getTime() ?? 0, r.startedAt?.getTime() ?? 0, r.createdAt.getTime(), follower?.lastActivity ?? 0);
  }

  /** The runner did not answer: the run is `lost` since its last sign of life (kept if already lost). */
  private async markLost(r: FollowedRun, why: string): Promise<void> {
    if (r.status !== "running") return; // lost already; a queued run that never started is failed by start
    await this.lose(r.id, this.lastSignOfLife(r), `run ${r.id}: runner not answering (${why}); marked lost`);
  }

  /** running → lost since `since` (the one transition both verdicts use), said once by whoever made it. */
  private async lose(runId: string, since: number, message: string): Promise<void> {
    if (await loseRun(this.db, runId, new Date(since))) this.opts.log(message);
  }

  /**
   * The runner says the run failed, and its log holds nothing this database lacks: the verdict will not
   * arrive as an event (its run.finished could not be written: "disk full on runner …"), so it is recorded
   * from here. The follower stays: the run.finished the runner writes once its disk takes writes again is
   * still stored (the first verdict kept).
   */
  private async recordUnloggedFailure(r: FollowedRun, reported: RunnerStatus["runs"][number]): Promise<boolean> {
    if (reported.status !== "failed" || reported.last_seq > r.lastSeq) return false;
    const error = reported.error ?? `the runner reports the run failed without a reason; its event log ends at seq ${reported.last_seq}`;
    // The runner still has the run and writes its run.finished once its disk takes writes: the attempt stays open.
    if (await failRun(this.db, r.id, error, { runnerMayRun: true })) this.opts.log(`run ${r.id}: failed on its runner: ${error}`);
    return true;
  }

  /**
   * The runner answered and still has the run: it is alive (running again if it was lost and the runner
   * runs it). A lost run the runner reports ended is not running again — a runner restarted mid-run
   * reports it failed ("the runner restarted while this run was in progress") — so it stays lost until
   * the follower stores that run.finished: the page never shows it running in between (bench/chaos.ts,
   * runner SIGKILL: lost → running → failed before this).
   */
  private async markAnswering(r: FollowedRun, reported: RunnerStatus["runs"][number]): Promise<void> {
    if (r.status !== "lost") await recordSignOfLife(this.db, r.id, r.status);
    else if (reported.status === "running" && (await recoverRun(this.db, r.id))) this.opts.log(`run ${r.id}: runner answers again; running`);
    this.followers.get(r.id)?.kick();
  }
}
