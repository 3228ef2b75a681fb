/**
 * A timer that counts only the time it is running: it fires once `ms` of unpaused time has passed. The
 * wall-clock limit of a rollout is one (watchdog.ts in the sandbox process, remote.ts's backstop in the
 * runner): paused while the rollout only waits for a slot on the shared engine, so a crowded engine does
 * not spend the user's time. No dependencies: it is bundled into the sandbox process too.
 */
export class PausableTimer {
  private runningSince: number | null = null;
  private used = 0;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly ms: number,
    private readonly fire: () => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.resume();
  }

  get paused(): boolean {
    return this.runningSince === null;
  }

  /** Running time counted so far. */
  elapsed(): number {
    return this.used + (this.runningSince === null ? 0 : this.now() - this.runningSince);
  }

  pause(): void {
    if (this.done || this.runningSince === null) return;
    this.used += this.now() - this.runningSince;
    this.runningSince = null;
    clearTimeout(this.timer);
  }

  resume(): void {
    if (this.done || this.runningSince !== null) return;
    this.runningSince = this.now();
    this.timer = setTimeout(() => this.expire(), Math.max(0, this.ms - this.used));
  }

  setPaused(paused: boolean): void {
    if (paused) this.pause();
    else this.resume();
  }

  clear(): void {
    this.done = true;
    clearTimeout(this.timer);
  }

  private expire(): void {
    // A timer can fire a little early or late against `now`; only the counted time decides.
    const left = this.ms - this.elapsed();
    if (left > 1) {
      this.timer = setTimeout(() => this.expire(), left);
      return;
    }
    this.done = true;
    this.fire();
  }
}
