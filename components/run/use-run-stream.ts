"use client";
/**
 * A run's live state: the stored log first (runs.events, paged from seq 0), then a socket.io subscription
 * from the last seq folded, re-subscribed from the gap-free point on every reconnect (run-live.ts; it
 * folds live events once per animation frame). Everything goes
 * through the pure reducer (run-state.ts), which drops duplicates and tolerates any order, so the overlap
 * between stored pages, the server's replay and live events is harmless.
 */
import { useEffect, useReducer, useRef, useState } from "react";
import { useTRPCClient } from "../trpc";
import { initialRunState, runReducer, type RunViewState } from "./run-state";
import { followRunLive } from "./run-live";
import { getSocket } from "./socket";

const PAGE = 1000;

export type StreamPhase = "loading" | "live" | "offline";

export interface RunStream {
  state: RunViewState;
  phase: StreamPhase;
  loadError: string | null;
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
  useEffect(() => {
    resumeFrom.current = state.contiguousSeq;
  }, [state.contiguousSeq]);

  useEffect(() => {
    let cancelled = false;
    dispatch({ type: "reset" });
    resumeFrom.current = 0;
    setPhase("loading");
    setLoadError(null);

    /** The last seq read from the stored log (the socket subscription starts after it). */
    let latestStored = 0;
    let stopLive: (() => void) | null = null;

    void (async () => {
      try {
        for (;;) {
          const page = await client.runs.events.query({ runId, afterSeq: latestStored, limit: PAGE });
          if (cancelled) return;
          if (page.length > 0) {
            dispatch({ type: "events", events: page });
            latestStored = page[page.length - 1]!.seq;
          }
          if (page.length < PAGE) break;
        }
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
        onStatus: (status) => dispatch({ type: "status", status }),
        onPhase: setPhase,
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

  return { state, phase, loadError };
}
