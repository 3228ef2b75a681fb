"use client";
/**
 * A run's live state: the stored log first (GET /api/runs/<id>/events, rollouts as summaries, paged from seq 0), then a socket.io subscription
 * from the last seq folded, re-subscribed from the gap-free point on every reconnect (run-live.ts; it
 * folds live events once per animation frame). Everything goes
 * through the pure reducer (run-state.ts), which drops duplicates and tolerates any order, so the overlap
 * between stored pages, the server's replay and live events is harmless.
 */
import { useCallback, useEffect, useReducer, useRef, useState } from "react";
import { useTRPCClient } from "@/components/trpc";
import { initialRunState, runReducer, type PageEvent, type RunViewState } from "./run-state";
import { followRunLive } from "./run-live";
import { DeliveryTracker } from "./delivery-view";
import type { ServerStatus } from "./status-fold";
import { getSocket } from "@/components/socket";

const PAGE = 1000;
/** Pages of the first load (GET /api/runs/<id>/events): big, since Postgres writes them as JSON text. */
const LOAD_PAGE = 5000;

/**
 * The first load asks for `view=summary`: rollouts without their conversations (rollout-summary.ts), which
 * are most of a run's bytes; a transcript reads its rollout whole when opened (whole-rollouts.ts).
 */
async function fetchEventsPage(runId: string, after: number): Promise<Response> {
  const res = await fetch(`/api/runs/${encodeURIComponent(runId)}/events?after=${after}&limit=${LOAD_PAGE}&view=summary`, { cache: "no-store" });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
    throw new Error(body?.error?.message ?? `events: HTTP ${res.status}`);
  }
  return res;
}

/**
 * The stored log from `after` on, page by page, each handed to `onPage` in order (it returns false to stop).
 * The next page is requested as soon as a response's headers say where it ends, so the network and the
 * server work on page n+1 while the browser parses and folds page n.
 */
async function loadStoredLog(runId: string, after: number, onPage: (events: PageEvent[]) => boolean): Promise<void> {
  let next: Promise<Response> | null = fetchEventsPage(runId, after);
  while (next) {
    const res: Response = await next;
    const count = Number(res.headers.get("x-count"));
    const last = Number(res.headers.get("x-last-seq"));
    next = count >= LOAD_PAGE ? fetchEventsPage(runId, last) : null;
    const page = (await res.json()) as PageEvent[];
    if (page.length === 0) break;
    if (!onPage(page)) {
      // Stopped (the page moved on): let an in-flight request finish unread.
      next?.catch(() => {});
      return;
    }
  }
}

export type StreamPhase = "loading" | "live" | "offline";

export interface RunStream {
  state: RunViewState;
  phase: StreamPhase;
  loadError: string | null;
  /** What the stream heard and when (the "live" indicator reads it on its own clock: delivery-view.ts). */
  delivery: DeliveryTracker;
  /** Fold a server snapshot of the run (runs.get) with the log, by attempt (status-fold.ts). */
  foldServerStatus: (status: ServerStatus) => void;
}

/**
 * @param knownLastSeq the run's stored last seq from elsewhere (runs.get, polled): when it is ahead of
 * what was folded, the gap is read over HTTP too, so a dead socket never leaves the page behind.
 */
export function useRunStream(runId: string, knownLastSeq = 0): RunStream {
  const client = useTRPCClient();
  const [state, dispatch] = useReducer(runReducer, initialRunState);
  const [phase, setPhase] = useState<StreamPhase>("loading");
  const [loadError, setLoadError] = useState<string | null>(null);
  const resumeFrom = useRef(0);
  const [delivery, setDelivery] = useState(() => new DeliveryTracker(Date.now()));
  const foldServerStatus = useCallback((s: ServerStatus) => dispatch({ type: "status", ...s }), []);
  useEffect(() => {
    resumeFrom.current = state.contiguousSeq;
  }, [state.contiguousSeq]);

  useEffect(() => {
    let cancelled = false;
    dispatch({ type: "reset" });
    const tracker = new DeliveryTracker(Date.now());
    setDelivery(tracker);
    resumeFrom.current = 0;
    setPhase("loading");
    setLoadError(null);

    /** The last seq read from the stored log (the socket subscription starts after it). */
    let latestStored = 0;
    let stopLive: (() => void) | null = null;

    void (async () => {
      try {
        await loadStoredLog(runId, latestStored, (page) => {
          if (cancelled) return false;
          dispatch({ type: "events", events: page });
          latestStored = page[page.length - 1]!.seq;
          return true;
        });
      } catch (e) {
        if (cancelled) return;
        // The socket replays the stored tail too, so a failed page is not fatal: say so and go on.
        setLoadError(e instanceof Error ? e.message : String(e));
      }
      if (cancelled) return;
      stopLive = followRunLive({
        socket: getSocket(),
        runId,
        resumeFrom: () => Math.max(resumeFrom.current, latestStored),
        onEvents: (events) => dispatch({ type: "events", events }),
        onStatus: (status) => dispatch({ type: "status", ...status }),
        onPhase: (p) => {
          // Connected (again) is where the silence count starts: loading a long stored log is no silence.
          if (p === "live") tracker.heard(Date.now());
          setPhase(p);
        },
        onHeard: () => tracker.heard(Date.now()),
        onDelivery: (d) => tracker.reported(d, Date.now()),
      });
    })();

    return () => {
      cancelled = true;
      stopLive?.();
    };
  }, [runId, client]);

  // Catch up over HTTP whenever the stored log is known to be ahead of what the page folded. One loop at
  // a time; it reads the latest target each round and stops if the page moved to another run.
  const catchingUp = useRef(false);
  const target = useRef(knownLastSeq);
  const currentRun = useRef(runId);
  useEffect(() => {
    target.current = knownLastSeq;
    currentRun.current = runId;
  });
  useEffect(() => {
    if (phase === "loading" || catchingUp.current || knownLastSeq <= state.contiguousSeq) return;
    catchingUp.current = true;
    const forRun = runId;
    void (async () => {
      try {
        let after = state.contiguousSeq;
        while (currentRun.current === forRun && after < target.current) {
          const page = await client.runs.events.query({ runId: forRun, afterSeq: after, limit: PAGE });
          if (currentRun.current !== forRun || page.length === 0) break;
          dispatch({ type: "events", events: page });
          after = page[page.length - 1]!.seq;
        }
      } catch {
        // The next poll of runs.get retries.
      } finally {
        catchingUp.current = false;
      }
    })();
  }, [knownLastSeq, state.contiguousSeq, phase, client, runId]);

  return { state, phase, loadError, delivery, foldServerStatus };
}
