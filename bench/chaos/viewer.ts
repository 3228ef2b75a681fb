/**
 * A page following a run, as the run page does: the app's own live subscription (features/run-view/components/run-live.ts)
 * and fold (run-state.ts) over a real socket.io connection to one web process, with the viewer's API token.
 * Besides the fold it keeps what arrived raw (every `run:event` seq, before any dedupe) and every status the
 * page held, in order, so a case can say what a person watching the page would have seen.
 */
import { io } from "socket.io-client";
import type { RunStatus, ServedRunEvent } from "@contracts";
import { followRunLive } from "@/features/run-view";
import { initialRunState, runReducer, type RunViewState } from "@/features/run-view";
import { keepReconnecting, type RollbookSocket } from "@/components/socket";

export interface Viewer {
  state: () => RunViewState;
  /** Seqs as they arrived on the socket (a resubscribe may replay some: the fold drops those). */
  arrived: number[];
  /** The page's status each time it changed, from the first one shown. */
  statuses: RunStatus[];
  /** Times the socket connected (each one subscribes again, from the page's gap-free point). */
  connects: () => number;
  close: () => void;
}

export function openViewer(webUrl: string, apiToken: string, runId: string): Viewer {
  const socket: RollbookSocket = keepReconnecting(io(webUrl, { transports: ["websocket"], reconnectionDelayMax: 1_000, auth: { token: apiToken } }));
  const arrived: number[] = [];
  const statuses: RunStatus[] = [];
  socket.on("run:event", (e: ServedRunEvent) => e.run_id === runId && arrived.push(e.seq));
  let connects = 0;
  socket.on("connect", () => connects++);
  let state = initialRunState;
  const apply = (next: RunViewState) => {
    state = next;
    if (state.status && state.status !== statuses.at(-1)) statuses.push(state.status);
  };
  const stop = followRunLive({
    socket,
    runId,
    resumeFrom: () => state.contiguousSeq,
    onEvents: (events) => apply(runReducer(state, { type: "events", events })),
    onStatus: (status) => apply(runReducer(state, { type: "status", ...status })),
    onPhase: () => {},
    nextFrame: (fn) => {
      const t = setImmediate(fn);
      return () => clearImmediate(t);
    },
  });
  return {
    state: () => state,
    arrived,
    statuses,
    connects: () => connects,
    close: () => {
      stop();
      socket.close();
    },
  };
}
