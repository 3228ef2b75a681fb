/**
 * Bounds the host calls one rollout has in flight (model, judge, MCP). Without it a scenario can fire
 * thousands of ctx.chat calls at once (`Promise.all` over a big array) and stall every run on the engine.
 * Calls beyond `maxInFlight` wait in a short queue; beyond `maxQueued` they fail at once. When the rollout
 * ends, close() aborts the calls in flight (their fetches are cancelled, so the engine drops the rows) and
 * rejects the queue: nothing outlives its rollout.
 */

export class LimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LimitError";
  }
}

export class HostCallGate {
  private inFlight = 0;
  private readonly queue: { start: () => void; reject: (err: Error) => void }[] = [];
  private readonly controller = new AbortController();
  private closedReason: string | null = null;

  constructor(
    readonly maxInFlight: number,
    readonly maxQueued: number,
  ) {}

  /** Aborted when the rollout ends. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get pending(): number {
    return this.inFlight + this.queue.length;
  }

  /** Runs `work` once a slot is free; it gets a signal that aborts when the rollout ends. */
  async run<T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.closedReason) throw new LimitError(`${what}: ${this.closedReason}`);
    if (this.inFlight >= this.maxInFlight) {
      if (this.queue.length >= this.maxQueued) {
        throw new LimitError(
          `${what}: ${this.inFlight + this.queue.length} calls already pending in this rollout ` +
            `(limits.max_inflight_calls ${this.maxInFlight}, plus ${this.maxQueued} waiting)`,
        );
      }
      await new Promise<void>((start, reject) => this.queue.push({ start, reject }));
    }
    this.inFlight++;
    try {
      return await work(this.controller.signal);
    } finally {
      this.inFlight--;
      this.queue.shift()?.start();
    }
  }

  close(reason = "the rollout has ended"): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    this.controller.abort(new LimitError(reason));
    for (const waiting of this.queue.splice(0)) waiting.reject(new LimitError(reason));
  }
}
