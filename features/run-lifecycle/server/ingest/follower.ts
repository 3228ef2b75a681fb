import { RunEvent, isTerminalStatus } from "@contracts";
import type { RunnerSubscription } from "@/server/runner-client";
import type { Db } from "@/server/db-types";
import { ingestAndEmit } from "./emit";
import type { FollowerOptions } from "./options";

/**
 * Follows one run's event stream and stores it by group commit: an event that arrives while no store is
 * in flight is stored at once (with whatever arrived in the same tick); events that arrive while a store
 * is in flight wait for it and then go together in the next one. An idle run therefore reaches the
 * database (and, once committed, the browsers) in one transaction's time, and a busy one in batches that
 * grow with the load — no timer holds anything back. Reconnects with backoff.
 */
export class RunFollower {
  private buffer: RunEvent[] = [];
  private scheduled = false;
  private storing = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private sub: RunnerSubscription | undefined;
  private chain: Promise<void> = Promise.resolve();
  private backoffMs = 1_000;
  private generation = 0;
  /** The runner the current stream reads from (batches are stored only while the run is still on it). */
  private runnerId: string | undefined;
  closed = false;
  finished = false;
  /** When the last event arrived (0 = none yet: connecting is not a sign of life). */
  lastActivity = 0;

  constructor(
    readonly runId: string,
    private readonly db: Db,
    private readonly opts: FollowerOptions,
    private readonly onDone: (f: RunFollower) => void,
    /** The highest seq sent to the run's room so far (by this process or, before it took the lease, others). */
    public emittedSeq: number,
  ) {}

  async connect(): Promise<void> {
    if (this.closed) return;
    const gen = ++this.generation;
    try {
      const run = await this.db.run.findUnique({ where: { id: this.runId }, select: { lastSeq: true, status: true, runnerId: true, attemptOpen: true } });
      // Followed until the runner's log and the database agree the attempt ended: a final status alone (stopped
      // while the runner was unreachable) is not that, the runner may still be logging it.
      if (!run || !run.runnerId || (isTerminalStatus(run.status) && !run.attemptOpen)) return this.close();
      const runner = await this.opts.runnerFor(run.runnerId);
      if (this.closed || gen !== this.generation) return;
      this.runnerId = run.runnerId;
      this.sub = runner.events(this.runId, run.lastSeq, {
        onEvent: (raw) => gen === this.generation && this.receive(raw),
        onError: (err) => gen === this.generation && this.dropped(`stream error: ${err.message}`),
        onComplete: () => gen === this.generation && this.dropped("stream ended"),
      });
    } catch (e) {
      this.dropped(`connect failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private receive(raw: unknown): void {
    const parsed = RunEvent.safeParse(raw);
    if (!parsed.success) {
      this.opts.log(`run ${this.runId}: dropped an invalid event: ${parsed.error.issues[0]?.message ?? "?"}`);
      return;
    }
    if (parsed.data.run_id !== this.runId) return;
    this.lastActivity = Date.now();
    this.backoffMs = 1_000;
    this.buffer.push(parsed.data);
    // One event stream chunk often carries several events: let the rest of this tick arrive first.
    if (!this.scheduled && !this.storing) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    }
  }

  /** Start storing the buffer unless a store is in flight (its end calls pump again). One at a time per run. */
  private pump(): void {
    if (this.storing || this.buffer.length === 0) return;
    const batch = this.buffer.splice(0, this.opts.maxBatch);
    this.storing = true;
    this.chain = (async () => {
      try {
        const res = await ingestAndEmit(this.db, this.runId, batch, this.runnerId);
        if (res.superseded) {
          this.buffer = [];
          this.dropped("the run was resumed on another runner");
        } else {
          // Everything up to the stored lastSeq has now reached the room (this batch's fresh events just now).
          this.emittedSeq = Math.max(this.emittedSeq, res.lastSeq);
          this.opts.database?.ok();
          this.opts.onStored?.(this.runId, batch, res);
        }
        if (!res.superseded && isTerminalStatus(res.status) && !res.attemptOpen) {
          this.finished = true;
          this.close();
        }
      } catch (e) {
        // The events are still on the runner. What is buffered behind the failed batch must not be stored
        // before it (its projections would skip the failed events for good): drop both, and resume the
        // stream after the stored lastSeq.
        this.buffer = [];
        this.opts.log(`run ${this.runId}: storing ${batch.length} events failed: ${e instanceof Error ? e.message : String(e)}`);
        this.dropped("store failed");
      } finally {
        this.storing = false;
        this.pump();
      }
    })();
  }

  /** Resolves once everything buffered so far is stored (or its store failed). */
  async flush(): Promise<void> {
    for (;;) {
      this.pump();
      if (!this.storing) return;
      await this.chain;
    }
  }

  private dropped(reason: string): void {
    if (this.closed) return;
    this.generation++; // ignore anything the old stream still delivers
    this.sub?.unsubscribe();
    this.sub = undefined;
    void this.flush().then(() => {
      if (this.closed) return;
      const delay = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, this.opts.maxBackoffMs);
      this.opts.log(`run ${this.runId}: ${reason}; reconnecting in ${delay / 1000} s`);
      this.reconnectTimer = setTimeout(() => {
        this.reconnectTimer = undefined;
        void this.connect();
      }, delay);
    });
  }

  /** The runner the current stream reads from (undefined before the first connect). */
  get streamRunnerId(): string | undefined {
    return this.runnerId;
  }

  /** The run moved to another runner (a resume): leave the old stream now and follow the run's runner. */
  restart(): void {
    if (this.closed) return;
    this.generation++;
    this.sub?.unsubscribe();
    this.sub = undefined;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.backoffMs = 1_000;
    void this.flush().then(() => this.connect());
  }

  /** The runner answers again: reconnect now instead of waiting out the backoff. */
  kick(): void {
    if (this.closed || this.sub || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.backoffMs = 1_000;
    void this.connect();
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.generation++;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.onDone(this);
  }

  /** Stop following, storing what is buffered first. */
  async shutdown(): Promise<void> {
    await this.flush();
    this.close();
  }
}
