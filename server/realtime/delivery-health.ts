/**
 * Delivery health: can this web process move a run's events from its runner to the database and on to the
 * pages right now? A socket that is connected says nothing about that — through a 20 s and a 90 s database
 * outage the page said "live" while nothing flowed (issue 17 finding 5).
 *
 * The probe is the database round trip ingestion makes anyway: every ingest lease tick (a third of the
 * lease, 2 s by default) and every stored batch report success or failure here. The state is "delayed"
 * when the last round trip failed, or when none has succeeded for `staleMs` (a hung link fails nothing, it
 * just never answers). Any process that reaches the database takes over the ingest lease of one that does
 * not (ingest/lease.ts), so this process's own link is what decides whether its pages get events.
 *
 * Sent to the sockets of this process only (`io.local`): the message is about this process, and must not
 * need the database (the Postgres adapter's NOTIFY) to get out. On every change at once, and to every run
 * room every `heartbeatMs`, so a page that hears nothing knows something is wrong even where this message
 * could not reach it (features/run-view/components/delivery-view.ts).
 */
import type { RollbookIo } from "./io";
import type { RunDeliveryMessage } from "@contracts/socket-events";

/** What ingestion tells the health tracker (features/run-lifecycle/server/ingest/). */
export interface DatabaseProbe {
  ok(): void;
  failed(): void;
}

export interface DeliveryHealthOptions {
  /** No successful round trip for this long reads as "delayed" (default 8 s: four lease ticks). */
  staleMs?: number;
  /** How often every run room hears the current state (default 2 s). */
  heartbeatMs?: number;
  now?: () => number;
}

export type DeliveryState = Omit<RunDeliveryMessage, "runId">;

/** Four ingest lease ticks (a third of the lease each) without a successful round trip, and at least 8 s. */
export function staleMsFor(leaseMs: number): number {
  return Math.max(8_000, Math.ceil((leaseMs / 3) * 4));
}

const UNREACHABLE = "database unreachable";
const NOT_ANSWERING = "database not answering";

export class DeliveryHealth implements DatabaseProbe {
  private lastOkAt: number;
  /** When the current run of failures began (null: the last round trip succeeded). */
  private failingSince: number | null = null;
  private liveSince: number;
  private lastSent: string | null = null;
  private timer: NodeJS.Timeout | undefined;
  private io: RollbookIo | undefined;
  private readonly staleMs: number;
  private readonly heartbeatMs: number;
  private readonly now: () => number;

  constructor(opts: DeliveryHealthOptions = {}) {
    this.staleMs = opts.staleMs ?? 8_000;
    this.heartbeatMs = opts.heartbeatMs ?? 2_000;
    this.now = opts.now ?? Date.now;
    this.lastOkAt = this.now();
    this.liveSince = this.lastOkAt;
  }

  ok(): void {
    const wasDelayed = this.current().state === "delayed";
    this.lastOkAt = this.now();
    this.failingSince = null;
    if (wasDelayed) {
      this.liveSince = this.lastOkAt;
      this.sendIfChanged();
    }
  }

  failed(): void {
    this.failingSince ??= this.now();
    this.sendIfChanged();
  }

  current(): DeliveryState {
    const now = this.now();
    if (this.failingSince !== null) {
      // Delayed since the last success (events after it may not have been stored), not the first failure.
      return { state: "delayed", since: this.lastOkAt, delayedMs: now - this.lastOkAt, reason: UNREACHABLE };
    }
    if (now - this.lastOkAt > this.staleMs) return { state: "delayed", since: this.lastOkAt, delayedMs: now - this.lastOkAt, reason: NOT_ANSWERING };
    return { state: "live", since: this.liveSince, delayedMs: 0, reason: null };
  }

  /** Starts the heartbeat to this process's run rooms. */
  attach(io: RollbookIo): void {
    this.io = io;
    this.timer = setInterval(() => this.broadcast(), this.heartbeatMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.io = undefined;
  }

  /** The state for one run: what a socket hears when it subscribes. */
  messageFor(runId: string): RunDeliveryMessage {
    return { runId, ...this.current() };
  }

  private sendIfChanged(): void {
    const c = this.current();
    if (`${c.state}|${c.reason}` !== this.lastSent) this.broadcast();
  }

  /** The current state to every run room with a socket on this process. */
  broadcast(): void {
    const io = this.io;
    if (!io) return;
    const c = this.current();
    this.lastSent = `${c.state}|${c.reason}`;
    for (const room of io.of("/").adapter.rooms.keys()) {
      if (!room.startsWith("run:")) continue;
      io.local.to(room).emit("run:delivery", { runId: room.slice("run:".length), ...c });
    }
  }
}
