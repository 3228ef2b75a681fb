/**
 * Heartbeats: every HEARTBEAT_MS each enabled runner is asked for its status. An answer records it healthy
 * (lastSeenAt, device, models, capacity); silence records why (unreachable, unauthorized), and what that
 * silence means for the runner's runs is the liveness supervisor's to say (./supervisor.ts: once the runner
 * has not answered for RUNNER_LOST_AFTER_MS its running runs are `lost`, "runner lost" on the page, with the
 * same transition the ingest scan uses). A runner answering again makes the ingest scan put its lost runs
 * back to running (or fail the ones it no longer knows).
 *
 * Several web processes may each run a heartbeat: every write is idempotent (health and lastSeenAt are the
 * runner's latest answer, last writer wins with the same facts; lost marking only moves running → lost), so
 * no lock is needed — and with no single holder, a dead web process cannot stop heartbeats.
 * pg_try_advisory_lock would save duplicate status calls (cheap) at the price of a session-bound lock the
 * Prisma pool does not pin to one connection.
 */
import { runnerById, type RunnerHandle } from "@/server/runner-client";
import { kickDispatch } from "../dispatch-kick";
import { recordRunnerAnswer, recordRunnerFailure } from "@/features/runners/server";
import type { Db } from "@/server/db-types";
import { LivenessSupervisor } from "./supervisor";

export interface RunnerHeartbeatOptions {
  heartbeatMs: number;
  lostAfterMs: number;
  runnerFor?: (runnerId: string) => Promise<RunnerHandle>;
  log?: (message: string) => void;
}

export class RunnerHeartbeat {
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private stopped = false;
  private readonly runnerFor: (runnerId: string) => Promise<RunnerHandle>;
  private readonly log: (message: string) => void;
  private readonly liveness: LivenessSupervisor;
  /** Silence is counted from the runner's last answer, but never from before this heartbeat could watch it. */
  private readonly startedAt = Date.now();

  constructor(
    private readonly db: Db,
    private readonly opts: RunnerHeartbeatOptions,
  ) {
    this.runnerFor = opts.runnerFor ?? ((id) => runnerById(db, id));
    this.log = opts.log ?? ((m) => console.warn(`[runners] ${m}`));
    this.liveness = new LivenessSupervisor(db, { lostAfterMs: opts.lostAfterMs, runnerFor: this.runnerFor, log: this.log });
  }

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.opts.heartbeatMs);
    this.timer.unref();
    void this.beat();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.beating;
  }

  /** One round of heartbeats (skipped while the previous one still waits on a slow runner). */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.beating ??= this.round().finally(() => (this.beating = null));
    return this.beating;
  }

  private async round(): Promise<void> {
    try {
      const runners = await this.db.runner.findMany({ where: { enabled: true }, select: { id: true, name: true, health: true, lastSeenAt: true } });
      const back = await Promise.all(runners.map((r) => this.check(r)));
      if (back.some(Boolean)) kickDispatch(this.db); // a runner with room answers again: queued runs may go
    } catch (e) {
      this.log(`heartbeat failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Returns true when the runner answers after it did not (or for the first time). */
  private async check(r: { id: string; name: string; health: string; lastSeenAt: Date | null }): Promise<boolean> {
    try {
      const runner = await this.runnerFor(r.id);
      // A slow answer is still an answer: waiting up to 5 s (less than lostAfterMs allows) keeps a busy
      // runner from reading as lost; rounds do not overlap, so a hung one delays only its own next beat.
      const status = await runner.status({ timeoutMs: Math.min(5_000, Math.max(1_000, this.opts.lostAfterMs / 2)) });
      // Back: it answers and can take runs (a runner whose disk is full answers, but is not back).
      return (await recordRunnerAnswer(this.db, r.id, status)) === "healthy" && r.health !== "healthy";
    } catch (e) {
      const health = await recordRunnerFailure(this.db, r.id, e);
      await this.liveness.runnerSilent(r, health, Math.max(r.lastSeenAt?.getTime() ?? 0, this.startedAt));
      return false;
    }
  }
}
