import { ACTIVE_RUN_STATUSES } from "@contracts";
import { rowToEvent } from "@/server/run-convert";
import { emitRunEvents, setIngestHook } from "@/server/run-hooks";
import type { Db } from "@/server/db-types";
import { LivenessSupervisor, type FollowedRun } from "../liveness";
import { RunFollower } from "./follower";
import { IngestLeases, newHolderId } from "./lease";
import type { FollowerOptions, IngestOptions } from "./options";

/**
 * Active runs, and ended runs whose attempt is still open on their runner (ingestion follows both). Never an
 * ART or Tinker run: it has no runner to follow or ask (its client drives it: features/art, features/tinker); its silence is
 * the supervisor's artClientsSilent.
 */
const FOLLOWED_RUNS = { kind: { notIn: ["art" as const, "tinker" as const] }, OR: [{ status: { in: [...ACTIVE_RUN_STATUSES] } }, { attemptOpen: true }] };

const ART_CLIENT_SILENT_MS = 30 * 60_000;

const QUEUED_FOLLOW_AFTER_MS = 10_000;

/** Re-sent to a room per read when a lease is taken over (see resend). */
const RESEND_PAGE = 1_000;

/**
 * Every active run is followed by exactly one web process: the holder of its ingest lease
 * (lease.ts). Each process renews its leases every leaseMs / 3 and, on the same tick, takes the
 * leases of active runs nobody holds (new ones, a dead process's once expired) — so with one process it
 * follows everything, with several they share the runs, and a killed one's runs move within about leaseMs.
 * The runner checks (lost / back / gone) are made by the holder only.
 */
export class IngestService {
  private readonly followers = new Map<string, RunFollower>();
  /** Runs whose lease is being taken right now (not followed yet). */
  private acquiring = new Set<string>();
  private scanTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private scanning = false;
  private leaseTicking = false;
  private lastRenewOk = Date.now();
  private readonly opts: FollowerOptions;
  private readonly artClientSilentMs: number;
  private stopped = false;
  readonly leases: IngestLeases;
  /** Decides what a quiet followed run's runner says about it (lost, back, gone): ../liveness. */
  private readonly liveness: LivenessSupervisor;

  constructor(
    private readonly db: Db,
    opts: IngestOptions,
  ) {
    const { holder, artClientSilentMs, ...rest } = opts;
    this.artClientSilentMs = artClientSilentMs ?? ART_CLIENT_SILENT_MS;
    this.opts = {
      maxBatch: 2_000,
      scanMs: 5_000,
      lostAfterMs: 15_000,
      maxBackoffMs: 30_000,
      leaseMs: 6_000,
      log: (m) => console.warn(`[ingest] ${m}`),
      ...rest,
    };
    this.leases = new IngestLeases(db, holder ?? newHolderId(), this.opts.leaseMs);
    this.liveness = new LivenessSupervisor(db, { lostAfterMs: this.opts.lostAfterMs, runnerFor: this.opts.runnerFor, log: this.opts.log }, this.followers);
  }

  /** Resume every run the database says is running (whose lease is free), and keep scanning. */
  async start(): Promise<void> {
    setIngestHook(this);
    await this.scan();
    this.scanTimer = setInterval(() => void this.scan(), this.opts.scanMs);
    this.scanTimer.unref();
    this.leaseTimer = setInterval(() => void this.leaseTick(), Math.max(100, Math.floor(this.opts.leaseMs / 3)));
    this.leaseTimer.unref();
  }

  /** Follow a run if this process can take its lease (a run another process holds is left to it). */
  follow(runId: string): void {
    void this.acquire([runId]);
  }

  /**
   * Follow the run on the runner the database now names (after a resume moved it), dropping any old stream.
   * Where another process holds the run's lease, that process notices the move at its next lease tick.
   */
  refollow(runId: string): void {
    const f = this.followers.get(runId);
    if (f) f.restart();
    else this.follow(runId);
  }

  isFollowing(runId: string): boolean {
    return this.followers.has(runId);
  }

  /** Takes the free leases among these runs and follows those runs. */
  private async acquire(runIds: string[]): Promise<void> {
    const wanted = runIds.filter((id) => !this.followers.has(id) && !this.acquiring.has(id));
    if (this.stopped || wanted.length === 0) return;
    for (const id of wanted) this.acquiring.add(id);
    try {
      for (const lease of await this.leases.take(wanted)) {
        if (this.stopped) break;
        const emitted = await this.resend(lease.runId, lease.emittedSeq);
        if (this.stopped || this.followers.has(lease.runId)) continue;
        const f = new RunFollower(lease.runId, this.db, this.opts, (done) => this.followerDone(done), emitted);
        this.followers.set(lease.runId, f);
        void f.connect();
      }
    } catch (e) {
      this.opts.log(`taking ingest leases failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      for (const id of wanted) this.acquiring.delete(id);
    }
  }

  /**
   * A lease taken over: the previous holder may have stored events it never sent to the run's room (killed
   * between the two). Send the stored events after what it recorded as emitted, so open pages have no gap
   * (they drop duplicates by seq). Returns the seq emitted up to.
   */
  private async resend(runId: string, emittedSeq: number): Promise<number> {
    let after = emittedSeq;
    for (;;) {
      const rows = await this.db.runEvent.findMany({ where: { runId, seq: { gt: after } }, orderBy: { seq: "asc" }, take: RESEND_PAGE });
      if (rows.length === 0) return after;
      emitRunEvents(runId, rows.map(rowToEvent));
      after = rows.at(-1)!.seq;
      if (rows.length < RESEND_PAGE) return after;
    }
  }

  private followerDone(done: RunFollower): void {
    if (this.followers.get(done.runId) !== done) return;
    this.followers.delete(done.runId);
    // Let another process have it at once (a no-op if someone else holds it already); stop() releases in bulk.
    if (!this.stopped) {
      this.leases.release(new Map([[done.runId, done.emittedSeq]])).catch((e: unknown) => {
        this.opts.log(`run ${done.runId}: releasing the ingest lease failed: ${e instanceof Error ? e.message : String(e)}`);
      });
    }
  }

  /** Active runs worth following: queued ones only once their start call has had time to finish. */
  private followable(active: Pick<FollowedRun, "id" | "status" | "runnerId" | "createdAt">[]): string[] {
    const now = Date.now();
    return active.filter((r) => r.status !== "queued" || (r.runnerId && now - r.createdAt.getTime() > QUEUED_FOLLOW_AFTER_MS)).map((r) => r.id);
  }

  /**
   * Every leaseMs / 3: renew this process's leases (a run whose lease was taken over is no longer followed
   * here), then take the leases of active runs nobody holds.
   */
  private async leaseTick(): Promise<void> {
    if (this.leaseTicking || this.stopped) return;
    this.leaseTicking = true;
    try {
      if (this.followers.size > 0) {
        try {
          const held = await this.leases.renew(new Map([...this.followers].map(([id, f]) => [id, f.emittedSeq])));
          this.lastRenewOk = Date.now();
          for (const [id, f] of this.followers) {
            if (held.has(id)) continue;
            this.opts.log(`run ${id}: ingest lease held by another process now; no longer following it here`);
            f.close();
          }
        } catch (e) {
          this.opts.database?.failed();
          this.opts.log(`renewing ingest leases failed: ${e instanceof Error ? e.message : String(e)}`);
          // Unrenewed for a whole TTL: another process may hold them now. Stop; the next tick takes them back if free.
          if (Date.now() - this.lastRenewOk > this.opts.leaseMs) {
            this.opts.log(`ingest leases not renewed for ${this.opts.leaseMs} ms; no longer following ${this.followers.size} run(s)`);
            for (const f of [...this.followers.values()]) f.close();
          }
          return;
        }
      } else {
        this.lastRenewOk = Date.now();
      }
      const active = await this.db.run.findMany({ where: FOLLOWED_RUNS, select: { id: true, status: true, runnerId: true, createdAt: true } });
      // A run resumed on another runner through another web process: follow it there now.
      for (const r of active) {
        const f = this.followers.get(r.id);
        if (f?.streamRunnerId && r.runnerId && r.runnerId !== f.streamRunnerId) f.restart();
      }
      this.opts.database?.ok();
      await this.acquire(this.followable(active));
    } catch (e) {
      this.opts.database?.failed();
      this.opts.log(`ingest lease tick failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.leaseTicking = false;
    }
  }

  /**
   * Follow active runs nobody follows; check the quiet ones with their runner (lost, back, or gone); tell a
   * runner that is reachable again to stop runs that were stopped while it was not.
   */
  async scan(): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    try {
      const active = await this.db.run.findMany({
        where: FOLLOWED_RUNS,
        select: { id: true, status: true, lastSeq: true, runnerId: true, createdAt: true, startedAt: true, finishedAt: true, lastHeartbeatAt: true, lostSince: true, attempt: true, attemptOpen: true },
      });
      // Queued runs too, once their start call has had time to finish: a start the runner accepted whose
      // "running" update was lost still gets its events (run.started makes it running).
      await this.acquire(this.followable(active));
      // The runner checks belong to each run's lease holder: N processes must not each ask the runner and
      // mark the run. A run with no runner has no follower (and no holder): failing it is one conditional
      // update, the same whoever makes it.
      await this.liveness.checkRuns(active.filter((r) => !r.runnerId || this.followers.has(r.id)));
      // ART runs have no runner and no follower: their client's silence is the only sign (one conditional update each).
      await this.liveness.artClientsSilent(this.artClientSilentMs);
      await this.leases.prune();
    } catch (e) {
      this.opts.log(`scan failed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.scanning = false;
    }
  }

  /** Stop scanning and following; buffered events are stored first, then the leases are released. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer) clearInterval(this.scanTimer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    setIngestHook(undefined);
    const followers = [...this.followers.values()];
    await Promise.all(followers.map((f) => f.shutdown()));
    this.followers.clear();
    await this.leases.release(new Map(followers.map((f) => [f.runId, f.emittedSeq]))).catch((e: unknown) => {
      this.opts.log(`releasing ingest leases failed (they expire in ${this.opts.leaseMs} ms): ${e instanceof Error ? e.message : String(e)}`);
    });
  }
}
