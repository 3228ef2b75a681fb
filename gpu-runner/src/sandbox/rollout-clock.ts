/**
 * A rollout's own clock, kept by the runner. A rollout's wall-clock limit counts its own time — its code
 * and the model working for it — not the time it waits for a slot on the shared engine: on a crowded
 * runner that wait is the runner's doing, not the user's bug. The clock is paused while the rollout has
 * calls waiting in the fair queue (engine/fair-queue.ts) and none being served; the sandbox process's
 * watchdog and the runner's backstop follow it (remote.ts sends each change over IPC). So that a rollout
 * never hangs forever behind others, real time is bounded too: ABSOLUTE_LIMIT_FACTOR × the limit.
 */

/** A rollout is stopped after this many times limits.rollout_timeout_ms of real time, however long it waited. */
export const ABSOLUTE_LIMIT_FACTOR = 3;

export class RolloutClock {
  private waiting = 0;
  private serving = 0;
  private pausedSince: number | null = null;
  private queued = 0;
  private servingSince: number | null = null;
  private served = 0;
  private readonly startedAt: number;
  private readonly listeners = new Set<(paused: boolean) => void>();

  constructor(private readonly now: () => number = () => performance.now()) {
    this.startedAt = now();
  }

  /** Waiting for an engine slot with nothing of its own on the engine: its limit is not running. */
  get paused(): boolean {
    return this.pausedSince !== null;
  }

  /** Real time since the rollout started. */
  elapsedMs(): number {
    return this.now() - this.startedAt;
  }

  /** Time spent paused (waiting for an engine slot, nothing of its own served). */
  queuedMs(): number {
    return this.queued + (this.pausedSince === null ? 0 : this.now() - this.pausedSince);
  }

  /** The rollout's own time: what its wall-clock limit counts. */
  runningMs(): number {
    return this.elapsedMs() - this.queuedMs();
  }

  /** Time with at least one of its model calls on the engine (the starvation measure weighs the engine's wait by it). */
  servingMs(): number {
    return this.served + (this.servingSince === null ? 0 : this.now() - this.servingSince);
  }

  /** A model call began waiting for an engine slot. */
  enterQueue(): void {
    this.waiting++;
    this.update();
  }

  /** A waiting call left the queue: it got a slot (`served`), or it was cancelled. */
  leaveQueue(served: boolean): void {
    this.waiting--;
    if (served) this.serving++;
    this.update();
  }

  /** A call got a slot without waiting. */
  startService(): void {
    this.serving++;
    this.update();
  }

  /** A served call finished. */
  endService(): void {
    this.serving--;
    this.update();
  }

  /** Called with the new state each time `paused` changes; returns the unsubscribe. */
  onChange(listener: (paused: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private update(): void {
    if (this.serving > 0 && this.servingSince === null) this.servingSince = this.now();
    else if (this.serving === 0 && this.servingSince !== null) {
      this.served += this.now() - this.servingSince;
      this.servingSince = null;
    }
    const paused = this.waiting > 0 && this.serving === 0;
    if (paused === this.paused) return;
    if (paused) this.pausedSince = this.now();
    else {
      this.queued += this.now() - (this.pausedSince as number);
      this.pausedSince = null;
    }
    for (const listener of [...this.listeners]) listener(paused);
  }
}

/** "12.3 s" */
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
