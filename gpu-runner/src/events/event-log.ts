/**
 * Per-run append-only event log. Every event gets the next sequence number (1, 2, 3…) and the attempt it
 * belongs to (RunSpec.attempt), and is appended as one JSON line to runs/<run>/events.jsonl before any
 * subscriber sees it, so a runner restart can serve the whole history. subscribe(run, afterSeq) yields the stored events after afterSeq, then live ones, in
 * seq order with no gap and no duplicate, and ends after run.finished.
 *
 * A line is on disk whole or not at all: a short or failed write (a full disk) cuts the file back to where
 * the line began and throws LogWriteError; the event gets no seq and nobody sees it, so the next event
 * takes the same number and nothing handed out is ever numbered again. A line without its newline (a
 * crash mid-write) is cut when the log is loaded. The boundaries a resume relies on (run.started,
 * step.finished, checkpoint.saved, run.finished) are fdatasync'ed before anyone sees them; the rollouts
 * between them are not (bench/event-log-fsync.ts: an fdatasync per rollout would cost more than the write),
 * so a power cut can lose the rollouts since the last step boundary, which a resume redoes anyway.
 *
 * The log never numbers an event at or below a seq the web server already stored (its ingestion drops a
 * seq it holds as a duplicate): a reader that asks for events after a seq this log has not reached (the
 * web server after this runner lost lines, e.g. to a crash before they reached the disk) is refused with
 * LogBehindError, and so is every append until the web server hands its copy back
 * (PUT /runs/<run>/events.jsonl, http/run-import.ts).
 */
import fs from "node:fs";
import path from "node:path";
import { eventAttempt, identifierRule, isIdentifier, NO_MASK, type RunEvent, type SecretMask } from "../../../contracts";
import { LogWriteError } from "./write-failure";

export { LogWriteError } from "./write-failure";

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event as emitted: the log fills in run_id, seq, ts and attempt. */
export type RunEventInput = DistributiveOmit<RunEvent, "run_id" | "seq" | "ts" | "attempt">;

// The engine accepts the same alphabet (its checkpoint folders are runs/<run>/checkpoints).
/** Run ids name folders here: the shared grammar (contracts/identifiers.json), which the engine reads too. */
const isRunId = (id: string) => isIdentifier("run_id", id);

/** Run ids become folder names; refuse anything that could escape the runs directory. */
export function assertSafeRunId(runId: string): void {
  if (!isRunId(runId)) {
    throw new Error(`invalid run id ${JSON.stringify(runId)}: ${identifierRule("run_id")}`);
  }
}

/** Events after which a crash must not lose the line: what a resume or the web server's verdict rests on. */
const DURABLE: ReadonlySet<RunEvent["type"]> = new Set(["run.started", "step.finished", "checkpoint.saved", "run.finished"]);

/** The web server holds events this log does not: numbering on would reuse their seqs. */
export class LogBehindError extends Error {
  constructor(
    readonly runId: string,
    readonly heldElsewhere: number,
    readonly lastSeq: number,
  ) {
    super(
      `run ${runId}: the web server has stored events up to seq ${heldElsewhere} but this runner's event log ends at seq ${lastSeq} ` +
        `(lines lost, e.g. in a crash before they reached the disk); numbering on would reuse stored seqs. Resume the run: ` +
        `the web server hands its copy of the log back first`,
    );
    this.name = "LogBehindError";
  }
}

/** A log damaged inside (not just a torn last line): served up to the damage, never appended to. */
export class LogDamagedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "LogDamagedError";
  }
}

function fsyncDir(dir: string): void {
  let fd: number | null = null;
  try {
    fd = fs.openSync(dir, "r");
    fs.fsyncSync(fd);
  } catch {
    // Not every filesystem lets a directory be fsync'ed; the file's own data is synced regardless.
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}

class RunLog {
  readonly events: RunEvent[] = [];
  private fd: number | null = null;
  /** Bytes of whole lines in the file: where the next line begins, and where a failed one is cut back to. */
  private size = 0;
  private waiters = new Set<() => void>();
  /** The highest seq a reader (the web server) already holds; appending below it is refused. */
  private heldElsewhere = 0;
  /** Why the file cannot be appended to (a damaged line inside it), or null. */
  damage: string | null = null;
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

  /**
   * Read the whole lines. A last line without its newline is the write a crash (or a full disk, before
   * this code cut such lines back) stopped short: it was never whole, so it is cut. A line inside the file
   * that is not an event of this sequence is damage, not a torn write: the lines before it are served, the
   * file is left as it is (cutting there would drop whole events after it) and appends are refused.
   */
  load(): void {
    if (!fs.existsSync(this.file)) return;
    const bytes = fs.readFileSync(this.file);
    let start = 0;
    let line = 0;
    while (start < bytes.length) {
      const end = bytes.indexOf(0x0a, start);
      if (end < 0) break; // the unfinished tail
      line++;
      const text = bytes.toString("utf8", start, end);
      if (text.trim() !== "") {
        const problem = this.accept(text);
        if (problem) {
          this.damage = `${this.file}: line ${line} ${problem}; the lines before it are served, nothing is appended until the web server hands its copy back (resume the run)`;
          this.size = start;
          return;
        }
      }
      start = end + 1;
    }
    this.size = start;
    if (start < bytes.length) fs.truncateSync(this.file, start);
  }

  /** Takes one stored line as the next event; returns what is wrong with it instead, if anything. */
  private accept(text: string): string | null {
    let event: RunEvent;
    try {
      event = JSON.parse(text) as RunEvent;
    } catch {
      return "is not a whole JSON event";
    }
    if (event.seq !== this.events.length + 1) return `has seq ${String(event.seq)}, expected ${this.events.length + 1}`;
    this.events.push(event);
    this.attempt = Math.max(this.attempt, eventAttempt(event));
    return null;
  }

  get lastSeq(): number {
    return this.events.length;
  }

  get finished(): boolean {
    return this.events.at(-1)?.type === "run.finished";
  }

  /** A reader holds events up to `seq`: if this log has not reached it, it must not number on (see the file comment). */
  noteHeldElsewhere(seq: number): void {
    if (seq > this.heldElsewhere) this.heldElsewhere = seq;
  }

  get behind(): LogBehindError | null {
    return this.heldElsewhere > this.events.length ? new LogBehindError(this.runId, this.heldElsewhere, this.events.length) : null;
  }

  append(input: RunEventInput): RunEvent {
    if (this.damage) throw new LogDamagedError(this.damage);
    const behind = this.behind;
    if (behind) throw behind;
    let event = { ...input, run_id: this.runId, seq: this.events.length + 1, ts: Date.now(), attempt: this.attempt } as RunEvent;
    let line = JSON.stringify(event);
    if (!this.mask.empty) {
      const masked = this.mask.mask(line);
      // Parsed back so that what subscribers get is exactly what the file holds.
      if (masked !== line) [line, event] = [masked, JSON.parse(masked) as RunEvent];
    }
    // Written (synchronously, in order, whole) before anyone is told: a subscriber never sees an unsaved event.
    this.writeLine(Buffer.from(line + "\n"), DURABLE.has(event.type));
    this.events.push(event);
    if (event.type === "run.finished") this.active = false;
    this.wake();
    return event;
  }

  private open(): number {
    if (this.fd !== null) return this.fd;
    const created = !fs.existsSync(this.file);
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const fd = fs.openSync(this.file, "a");
    try {
      const size = fs.fstatSync(fd).size;
      // Longer: a failed line whose cut-back failed too (the handle was dropped then). Shorter: someone else
      // cut the file under this process — its lines are gone from the disk, so nothing may go after them.
      if (size > this.size) fs.ftruncateSync(fd, this.size);
      else if (size < this.size) {
        this.damage = `${this.file} is ${size} bytes, shorter than the ${this.size} this runner wrote: it was cut outside the runner`;
        throw new LogDamagedError(this.damage);
      }
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    // The file's name must survive a crash as well as its bytes.
    if (created) fsyncDir(path.dirname(this.file));
    this.fd = fd;
    return fd;
  }

  /** The whole line, or nothing: on any failure the file is cut back to where the line began. */
  private writeLine(bytes: Buffer, durable: boolean): void {
    let fd: number;
    try {
      fd = this.open();
    } catch (err) {
      if (err instanceof LogDamagedError) throw err;
      throw new LogWriteError(this.file, err, 0, bytes.length);
    }
    const start = this.size;
    let written = 0;
    try {
      // write(2) may take part of the buffer (a disk that fills mid-line): go on until all of it or an error.
      while (written < bytes.length) {
        const n = fs.writeSync(fd, bytes, written, bytes.length - written);
        if (n <= 0) throw Object.assign(new Error("write(2) wrote nothing"), { code: "EIO" });
        written += n;
      }
      if (durable) fs.fdatasyncSync(fd);
    } catch (err) {
      this.cutBack(fd, start);
      throw new LogWriteError(this.file, err, written, bytes.length);
    }
    this.size = start + bytes.length;
  }

  private cutBack(fd: number, start: number): void {
    try {
      fs.ftruncateSync(fd, start);
    } catch {
      // The next open cuts it (size > this.size); until then the handle is not trusted.
      this.close();
    }
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
      .filter(isRunId);
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

  /** Why the run's log cannot be appended to (damaged inside, or behind what the web server holds), or null. */
  problem(runId: string): string | null {
    const log = this.get(runId);
    return log.damage ?? log.behind?.message ?? null;
  }

  /**
   * The web server holds the run's events up to `seq` (its stored lastSeq, sent with a resume): the log
   * refuses to number at or below it (see the file comment).
   */
  noteHeldElsewhere(runId: string, seq: number): void {
    this.get(runId).noteHeldElsewhere(seq);
  }

  /**
   * The run ended but its run.finished could not be written (the disk is full): it is no longer being
   * written, and subscribers wait for that run.finished, which is written once the disk takes it.
   */
  endUnlogged(runId: string): void {
    const log = this.get(runId);
    log.active = false;
    log.wake();
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
    // A reader ahead of a log nobody is writing (the web server, after this runner lost lines) would wait
    // for events numbered into the seqs it already holds and silently skip them: refuse it loudly, and keep
    // the log from numbering there. (A reader ahead of a run being written just waits for it, as before.)
    if (!log.active) {
      log.noteHeldElsewhere(cursor);
      const behind = log.behind;
      if (behind) throw behind;
    }
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
      // Forgotten (its file was replaced: a log handed back by the web server): end, so the reader comes
      // back after its last seq and reads the file as it is now, not a copy nobody appends to.
      if (this.logs.get(runId) !== log) return;
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
