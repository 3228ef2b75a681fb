/**
 * A run's live socket subscription, without React: subscribe from the gap-free point the caller folded to,
 * re-subscribe from it on every reconnect, and hand events over once per animation frame.
 *
 * Why once per frame: events arrive one websocket message each, and folding (and re-rendering) per event
 * would be wasted work; the screen cannot show more than one state per frame anyway, so a frame is the
 * longest an event need wait. (The page used to hold events 50 ms, a good part of its live latency.)
 * Hidden tabs get no frames: their events wait, and fold when the tab is shown again.
 *
 * The server's protocol (server/realtime/socket-server.ts): join the room, replay the stored events after
 * afterSeq, then live ones; overlaps are possible, so the caller's fold must drop duplicates by seq.
 */
import type { ServedRunEvent } from "@contracts";
import type { RunDeliveryMessage, RunStatusMessage } from "@/contracts/socket-events";
import type { ServerStatus } from "./status-fold";
import type { RollbookSocket } from "@/components/socket";

export type LivePhase = "live" | "offline";

export interface RunLiveOptions {
  socket: RollbookSocket;
  runId: string;
  /** The highest seq n such that 1..n are all folded: the next subscription asks for what follows it. */
  resumeFrom: () => number;
  onEvents: (events: ServedRunEvent[]) => void;
  /** The server's snapshot of the run (its attempt and stored last seq with it: status-fold.ts). */
  onStatus: (status: ServerStatus) => void;
  onPhase: (phase: LivePhase) => void;
  /** The server's word on delivery health (`run:delivery`, also its heartbeat). */
  onDelivery?: (delivery: RunDeliveryMessage) => void;
  /** Anything at all was heard about the run (an event, a status, a heartbeat): called at once, not per frame. */
  onHeard?: () => void;
  /** Runs `fn` before the next paint (default: requestAnimationFrame, or a 0 ms timer where there is none). */
  nextFrame?: (fn: () => void) => () => void;
}

const defaultNextFrame = (fn: () => void): (() => void) => {
  if (typeof requestAnimationFrame === "function") {
    const id = requestAnimationFrame(fn);
    return () => cancelAnimationFrame(id);
  }
  const t = setTimeout(fn, 0);
  return () => clearTimeout(t);
};

/** A subscription the server could not serve (its database) is asked again after this, doubling up to the max. */
const SUBSCRIBE_RETRY_MS = 1_000;
const SUBSCRIBE_RETRY_MAX_MS = 10_000;

/** Starts following; returns the function that stops (and unsubscribes). */
export function followRunLive(opts: RunLiveOptions): () => void {
  const { socket, runId } = opts;
  const nextFrame = opts.nextFrame ?? defaultNextFrame;
  let stopped = false;
  let buffer: ServedRunEvent[] = [];
  let cancelFrame: (() => void) | null = null;
  let retryTimer: ReturnType<typeof setTimeout> | null = null;
  let retryMs = SUBSCRIBE_RETRY_MS;

  const fold = () => {
    cancelFrame = null;
    if (stopped || buffer.length === 0) return;
    const events = buffer;
    buffer = [];
    opts.onEvents(events);
  };
  const onEvent = (e: ServedRunEvent) => {
    if (e.run_id !== runId) return;
    opts.onHeard?.();
    buffer.push(e);
    cancelFrame ??= nextFrame(fold);
  };
  const onStatus = (s: RunStatusMessage) => {
    if (s.runId !== runId) return;
    opts.onHeard?.();
    opts.onStatus({ status: s.status, attempt: s.attempt, lastSeq: s.lastSeq });
  };
  const onDelivery = (d: RunDeliveryMessage) => {
    if (d.runId !== runId) return;
    opts.onHeard?.();
    opts.onDelivery?.(d);
  };
  const subscribe = () => {
    if (retryTimer) clearTimeout(retryTimer);
    retryTimer = null;
    // Ask from the gap-free point: anything after it that the page already holds is dropped as a duplicate.
    socket.emit("run:subscribe", { runId, afterSeq: opts.resumeFrom() }, (ack) => {
      if (stopped) return;
      if (!ack.ok) {
        // The server could not read the database: not subscribed, so ask again (a connected socket would
        // otherwise never be in the run's room until it reconnects). "Not found" is an answer: no retry.
        if (ack.retry && socket.connected) {
          retryTimer = setTimeout(subscribe, retryMs);
          retryMs = Math.min(retryMs * 2, SUBSCRIBE_RETRY_MAX_MS);
        }
        return;
      }
      retryMs = SUBSCRIBE_RETRY_MS;
      opts.onHeard?.();
      opts.onStatus({ status: ack.status, attempt: ack.attempt, lastSeq: ack.lastSeq });
      opts.onPhase("live");
    });
    opts.onPhase("live");
  };
  const onDisconnect = () => {
    if (!stopped) opts.onPhase("offline");
  };

  socket.on("run:event", onEvent);
  socket.on("run:status", onStatus);
  socket.on("run:delivery", onDelivery);
  socket.on("connect", subscribe);
  socket.on("disconnect", onDisconnect);
  if (socket.connected) subscribe();
  else opts.onPhase("offline");

  return () => {
    stopped = true;
    cancelFrame?.();
    if (retryTimer) clearTimeout(retryTimer);
    socket.off("run:event", onEvent);
    socket.off("run:status", onStatus);
    socket.off("run:delivery", onDelivery);
    socket.off("connect", subscribe);
    socket.off("disconnect", onDisconnect);
    if (socket.connected) socket.emit("run:unsubscribe", { runId });
  };
}
