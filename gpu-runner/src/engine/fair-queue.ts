/**
 * The runner's fair queue in front of the engine. Every rollout of every run on this runner samples the one
 * engine; without a queue of our own, whoever sends most gets most (a scenario calling ctx.chat in a tight
 * loop got 33 answers while its sibling rollouts got none in 127 s). So:
 * - at most `capacity()` chat calls are on the engine at once: its batch capacity (EngineHealth
 *   .batch_capacity), else the runner's ENGINE_BATCH_CAPACITY. More would only wait in the engine's queue,
 *   where the runner can neither order them nor tell waiting from working;
 * - a run has at most its limits.max_run_inflight_calls on the engine;
 * - when a slot frees, it goes round-robin across runs (the run served least recently that has a call
 *   waiting and is under its cap), then within that run to the rollout with the fewest calls on the engine,
 *   ties to the one served least recently (never served first), then to the call that waited longest. A
 *   looping rollout's calls are always queued: by age alone they would go before a sibling's first call;
 * - a call whose rollout ended or was aborted leaves the queue at once.
 * Each rollout's RolloutClock hears when it waits and when it is served, so its wall-clock limit does not
 * count time spent here. (The engine shares its own batches by run, then rollout, too: the OpenAI `user`
 * of every call is "<run id>/<rollout id>".)
 */
import type { RolloutClock } from "../sandbox/rollout-clock";

export interface FairCall {
  runId: string;
  /** The rollout's id (its trajectory id): the unit shared within a run. */
  rolloutId: string;
  /** limits.max_run_inflight_calls of the run. */
  runCap: number;
  clock?: RolloutClock;
  /** Aborted when the rollout ends (or the run stops): the call leaves the queue. */
  signal?: AbortSignal;
}

/** Runs whose place in the round is remembered while they have nothing on the engine. */
const MAX_REMEMBERED_RUNS = 1_000;

interface Waiter {
  seq: number;
  call: FairCall;
  start: () => void;
  cancel: (reason: unknown) => void;
}

interface RolloutState {
  inFlight: number;
  /** When one of its calls last got a slot (0: never). */
  lastServed: number;
  waiters: Waiter[];
}

interface RunState {
  inFlight: number;
  /** The last time (a sequence number) one of its calls got a slot: least recent goes first. */
  lastServed: number;
  rollouts: Map<string, RolloutState>;
}

/** `a` should be served before `b`: fewer calls on the engine, then served less recently, then waited longer. */
function neediest(a: RolloutState, b: RolloutState): boolean {
  if (a.inFlight !== b.inFlight) return a.inFlight < b.inFlight;
  if (a.lastServed !== b.lastServed) return a.lastServed < b.lastServed;
  return (a.waiters[0] as Waiter).seq < (b.waiters[0] as Waiter).seq;
}

export interface FairQueueStatus {
  capacity: number;
  in_flight: number;
  waiting: number;
}

export class FairQueue {
  private inFlight = 0;
  private waiting = 0;
  private seq = 0;
  private readonly runs = new Map<string, RunState>();
  /**
   * When runs with nothing on the engine were last served: a run whose every call came and went would
   * otherwise come back as new each time and jump the round. Bounded (oldest dropped first).
   */
  private readonly lastServedOf = new Map<string, number>();

  /** `capacity` is read at every decision: the engine's batch capacity can change with a restart. */
  constructor(private readonly capacity: () => number) {}

  status(): FairQueueStatus {
    return { capacity: this.capacity(), in_flight: this.inFlight, waiting: this.waiting };
  }

  /** Runs `work` once the call has an engine slot; the slot is handed on when it settles. */
  async run<T>(call: FairCall, work: () => Promise<T>): Promise<T> {
    await this.acquire(call);
    try {
      return await work();
    } finally {
      this.release(call);
    }
  }

  private acquire(call: FairCall): Promise<void> {
    call.signal?.throwIfAborted();
    const run = this.runState(call.runId);
    const rollout = this.rolloutState(run, call.rolloutId);
    // After every change the queue hands out every slot it can, so no waiter could take a free slot now:
    // a call that finds room for itself takes it without queueing (and its clock never pauses).
    if (this.inFlight < Math.max(1, this.capacity()) && run.inFlight < call.runCap) {
      this.take(run, rollout);
      call.clock?.startService();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => waiter.cancel(call.signal?.reason ?? new Error("aborted"));
      const waiter: Waiter = {
        seq: ++this.seq,
        call,
        start: () => {
          call.signal?.removeEventListener("abort", onAbort);
          call.clock?.leaveQueue(true);
          resolve();
        },
        cancel: (reason) => {
          call.signal?.removeEventListener("abort", onAbort);
          const i = rollout.waiters.indexOf(waiter);
          if (i < 0) return;
          rollout.waiters.splice(i, 1);
          this.waiting--;
          call.clock?.leaveQueue(false);
          this.forget(call.runId, call.rolloutId);
          // A waiter that leaves can unblock nobody (it held no slot); no dispatch needed.
          reject(reason instanceof Error ? reason : new Error(String(reason)));
        },
      };
      rollout.waiters.push(waiter);
      this.waiting++;
      call.clock?.enterQueue();
      call.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  private release(call: FairCall): void {
    const run = this.runs.get(call.runId);
    const rollout = run?.rollouts.get(call.rolloutId);
    if (!run || !rollout) return;
    this.inFlight--;
    run.inFlight--;
    rollout.inFlight--;
    call.clock?.endService();
    this.forget(call.runId, call.rolloutId);
    this.dispatch();
  }

  /** Hands free slots to waiters: the run served least recently (under its cap), then its neediest rollout. */
  private dispatch(): void {
    while (this.waiting > 0 && this.inFlight < Math.max(1, this.capacity())) {
      let best: RunState | null = null;
      for (const run of this.runs.values()) {
        if (!this.hasWaiter(run) || run.inFlight >= this.runCap(run)) continue;
        if (best === null || run.lastServed < best.lastServed) best = run;
      }
      if (best === null) return; // every waiting run is at its cap
      let pick: RolloutState | null = null;
      for (const rollout of best.rollouts.values()) {
        if (rollout.waiters.length > 0 && (pick === null || neediest(rollout, pick))) pick = rollout;
      }
      const waiter = (pick as RolloutState).waiters.shift() as Waiter;
      this.waiting--;
      this.take(best, pick as RolloutState);
      waiter.start();
    }
  }

  private take(run: RunState, rollout: RolloutState): void {
    this.inFlight++;
    run.inFlight++;
    rollout.inFlight++;
    run.lastServed = ++this.seq;
    rollout.lastServed = this.seq;
  }

  private hasWaiter(run: RunState): boolean {
    for (const rollout of run.rollouts.values()) if (rollout.waiters.length > 0) return true;
    return false;
  }

  /** The run's cap: the one its waiting calls carry (every call of a run carries the same). */
  private runCap(run: RunState): number {
    for (const rollout of run.rollouts.values()) {
      const head = rollout.waiters[0];
      if (head) return head.call.runCap;
    }
    return Number.POSITIVE_INFINITY;
  }

  private runState(runId: string): RunState {
    let run = this.runs.get(runId);
    if (!run) {
      // A run never served goes first; one that comes back keeps its place in the round.
      run = { inFlight: 0, lastServed: this.lastServedOf.get(runId) ?? 0, rollouts: new Map() };
      this.lastServedOf.delete(runId);
      this.runs.set(runId, run);
    }
    return run;
  }

  private rolloutState(run: RunState, rolloutId: string): RolloutState {
    let rollout = run.rollouts.get(rolloutId);
    if (!rollout) {
      rollout = { inFlight: 0, lastServed: 0, waiters: [] };
      run.rollouts.set(rolloutId, rollout);
    }
    return rollout;
  }

  /** Drops the state of a rollout (and run) with nothing in flight or waiting: nothing outlives its rollout. */
  private forget(runId: string, rolloutId: string): void {
    const run = this.runs.get(runId);
    const rollout = run?.rollouts.get(rolloutId);
    if (!run || !rollout || rollout.inFlight > 0 || rollout.waiters.length > 0) return;
    run.rollouts.delete(rolloutId);
    if (run.rollouts.size > 0) return;
    this.runs.delete(runId);
    this.lastServedOf.set(runId, run.lastServed);
    if (this.lastServedOf.size > MAX_REMEMBERED_RUNS) this.lastServedOf.delete(this.lastServedOf.keys().next().value as string);
  }
}
