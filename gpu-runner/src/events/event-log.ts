/**
 * Per-run append-only event log. Every event gets the next sequence number (1, 2, 3…) and the attempt it
 * belongs to (RunSpec.attempt), and is appended as one JSON line to runs/<run>/events.jsonl before any
 * subscriber sees it, so a runner restart can serve the whole history. subscribe(run, afterSeq) yields the stored events after afterSeq, then live ones, in
 * seq order with no gap and no duplicate, and ends after run.finished.
 */
import fs from "node:fs";
import path from "node:path";
import { eventAttempt, NO_MASK, type RunEvent, type SecretMask } from "../../contracts";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event as emitted: the log fills in run_id, seq, ts and attempt. */
export type RunEventInput = DistributiveOmit<RunEvent, "run_id" | "seq" | "ts" | "attempt">;

// The engine accepts the same alphabet (its checkpoint folders are runs/<run>/checkpoints).
const RUN_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** Run ids become folder names; refuse anything that could escape the runs directory. */
export function assertSafeRunId(runId: string): void {
  if (!RUN_ID_RE.test(runId)) {
    throw new Error(`invalid run id ${JSON.stringify(runId)}: 1-128 letters, digits, '_' or '-'`);
  }
}

class RunLog {
  readonly events: RunEvent[] = [];
  private fd: number | null = null;
  private waiters = new Set<() => void>();
  /** True while a run is writing to this log (between run.started and run.finished of this process). */
  active = false;
  /** The run's workspace secrets, masked in every line before it is written or handed to anyone. */
  mask: SecretMask = NO_MASK;
  /** The attempt events are appended for (begin sets it; loaded logs continue their last one). */
  attempt = 1;

  constructor(
    readonly runId: string,
    readonly file: string,
  ) {}

  load(): void {
    if (!fs.existsSync(this.file)) return;
    const text = fs.readFileSync(this.file, "utf8");
    const lines = text.split("\n");
    let validBytes = 0;
    for (const line of lines) {
      if (line.trim() === "") {
        validBytes += line.length + 1;
        continue;
      }
      let event: RunEvent;
      try {
        event = JSON.parse(line) as RunEvent;
      } catch {
        break; // a line cut short by a crash mid-write: everything before it is intact
      }
      if (event.seq !== this.events.length + 1) {
        throw new Error(`${this.file}: expected seq ${this.events.length + 1}, found ${event.seq}`);
      }
      this.events.push(event);
      this.attempt = Math.max(this.attempt, eventAttempt(event));
      validBytes += Buffer.byteLength(line) + 1;
    }
    // Drop a torn tail so the next append starts on a clean line.
    const size = fs.statSync(this.file).size;
    if (validBytes < size) fs.truncateSync(this.file, Math.min(validBytes, size));
  }

  get lastSeq(): number {
    return this.events.length;
  }

  get finished(): boolean {
    return this.events.at(-1)?.type === "run.finished";
  }

  append(input: RunEventInput): RunEvent {
    let event = { ...input, run_id: this.runId, seq: this.events.length + 1, ts: Date.now(), attempt: this.attempt } as RunEvent;
    let line = JSON.stringify(event);
    if (!this.mask.empty) {
      const masked = this.mask.mask(line);
      // Parsed back so that what subscribers get is exactly what the file holds.
      if (masked !== line) [line, event] = [masked, JSON.parse(masked) as RunEvent];
    }
    if (this.fd === null) {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.fd = fs.openSync(this.file, "a");
    }
    // Written (synchronously, in order) before anyone is told: a subscriber never sees an unsaved event.
    fs.writeSync(this.fd, line + "\n");
    this.events.push(event);
    if (event.type === "run.finished") this.active = false;
    this.wake();
    return event;
  }

  wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w();
  }

  waitForChange(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        signal?.removeEventListener("abort", done);
        this.waiters.delete(done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
  }
}

export class EventLog {
  private logs = new Map<string, RunLog>();

  constructor(readonly runsDir: string) {}

  fileOf(runId: string): string {
    assertSafeRunId(runId);
    return path.join(this.runsDir, runId, "events.jsonl");
  }

  /** The run's log, loaded from disk the first time (an empty log if the run has no file). */
  private get(runId: string): RunLog {
    let log = this.logs.get(runId);
    if (!log) {
      log = new RunLog(runId, this.fileOf(runId));
      log.load();
      this.logs.set(runId, log);
    }
    return log;
  }

  /** Whether the run has any event, in memory or on disk. */
  exists(runId: string): boolean {
    return this.get(runId).lastSeq > 0;
  }

  /** Run ids with an events.jsonl under the runs directory. */
  listStored(): string[] {
    if (!fs.existsSync(this.runsDir)) return [];
    return fs
      .readdirSync(this.runsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && fs.existsSync(path.join(this.runsDir, d.name, "events.jsonl")))
      .map((d) => d.name)
      .filter((name) => RUN_ID_RE.test(name));
  }

  lastSeq(runId: string): number {
    return this.get(runId).lastSeq;
  }

  isFinished(runId: string): boolean {
    return this.get(runId).finished;
  }

  isActive(runId: string): boolean {
    return this.get(runId).active;
  }

  events(runId: string): readonly RunEvent[] {
    return this.get(runId).events;
  }

  /**
   * Mark the run as being written by this process (subscribers then wait past a previous run.finished), with
   * the secrets its events must never contain (kept in memory only, for as long as this process runs).
   */
  begin(runId: string, mask: SecretMask = NO_MASK, attempt = 1): void {
    const log = this.get(runId);
    log.active = true;
    log.mask = mask;
    log.attempt = attempt;
  }

  /** The attempt the run's log is at: its last begin's, or for a loaded log the last event's. */
  attemptOf(runId: string): number {
    return this.get(runId).attempt;
  }

  /** The run's secret mask (NO_MASK when it has none), for its log lines outside the event log. */
  maskOf(runId: string): SecretMask {
    return this.logs.get(runId)?.mask ?? NO_MASK;
  }

  append(runId: string, event: RunEventInput): RunEvent {
    return this.get(runId).append(event);
  }

  /**
   * Stored events with seq > afterSeq, then live ones. Ends after yielding a run.finished that is the last
   * event of a run no longer being written (a resumed run appends after an earlier run.finished: a
   * subscriber that reached that earlier end subscribes again from its last seq), or when signal aborts.
   */
  async *subscribe(runId: string, afterSeq: number, signal?: AbortSignal): AsyncGenerator<RunEvent, void, undefined> {
    for await (const batch of this.subscribeBatches(runId, afterSeq, signal, 1)) yield batch[0] as RunEvent;
  }

  /**
   * subscribe() in batches: each yield is every event already in the log past the cursor (at most `max`),
   * so a reader catching up gets hundreds per message while a live reader gets each event as it is
   * appended (a batch of one) — batching never waits for events to accumulate.
   */
  async *subscribeBatches(runId: string, afterSeq: number, signal?: AbortSignal, max = 500): AsyncGenerator<RunEvent[], void, undefined> {
    const log = this.get(runId);
    let cursor = Math.max(0, Math.min(Math.floor(afterSeq), Number.MAX_SAFE_INTEGER));
    for (;;) {
      if (signal?.aborted) return;
      while (cursor < log.events.length) {
        const batch = log.events.slice(cursor, cursor + max);
        cursor += batch.length;
        yield batch;
        if (signal?.aborted) return;
      }
      if (log.finished && !log.active) return;
      // Nothing new and the run is still going (or not started yet): wait for the next append.
      await log.waitForChange(signal);
    }
  }

  /** Release a run's file handle and drop it from memory (it reloads from disk when asked again). */
  forget(runId: string): void {
    const log = this.logs.get(runId);
    if (!log) return;
    log.close();
    log.wake();
    this.logs.delete(runId);
  }

  close(): void {
    for (const id of [...this.logs.keys()]) this.forget(id);
  }
}
