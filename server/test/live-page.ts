/**
 * The browser half of the delivery test and the live-latency benchmark: a page that follows one run with
 * the app's own live subscription (features/run-view/components/run-live.ts) and fold (run-state.ts) over a real
 * socket.io connection, and shows each rollout as a list item (text nodes). Bundled with esbuild and
 * served by server/test/delivery-web.ts; reads ?run=<id>&token=<api token> from its URL.
 *
 * Exposes window.__live for the test to read what the page shows, and stamps each rollout's first
 * appearance in the DOM (a MutationObserver, so the time is when the list changed, not when code ran).
 */
import { io } from "socket.io-client";
import type { ServedRunEvent } from "@contracts";
import { followRunLive } from "@/features/run-view";
import { initialRunState, runReducer, type RunViewState } from "@/features/run-view";
import { keepReconnecting, type RollbookSocket } from "@/components/socket";

declare global {
  interface Window {
    __live: {
      state: () => { contiguousSeq: number; maxSeq: number; seen: number; status: string | null; rolloutIds: string[]; phase: string };
      /** Rollout seq → Date.now() when its list item appeared; with the event's ts, the latency. */
      shownAt: Record<number, number>;
      /** Rollout seq → the event's ts (when the runner appended it). */
      emittedAt: Record<number, number>;
      /** run:event messages received, duplicates included. */
      received: number;
      socket: RollbookSocket;
    };
  }
}

const params = new URLSearchParams(location.search);
const runId = params.get("run") ?? "";
const socket: RollbookSocket = keepReconnecting(
  io({ transports: ["websocket"], reconnectionDelayMax: 2_000, auth: { token: params.get("token") }, autoConnect: !params.get("poll") }),
);
let state: RunViewState = initialRunState;
let phase = "offline";
const list = document.getElementById("rollouts")!;
const statusLine = document.getElementById("status")!;
const rendered = new Set<string>();

const live: Window["__live"] = {
  state: () => ({
    contiguousSeq: state.contiguousSeq,
    maxSeq: state.maxSeq,
    seen: state.seen.size,
    status: state.status,
    rolloutIds: state.rollouts.map((r) => r.id),
    phase,
  }),
  shownAt: {},
  emittedAt: {},
  received: 0,
  socket,
};
window.__live = live;
socket.on("run:event", () => live.received++);

new MutationObserver((records) => {
  const now = Date.now();
  for (const r of records) {
    for (const node of r.addedNodes) {
      const seq = Number((node as HTMLElement).dataset?.seq);
      if (seq) live.shownAt[seq] ??= now;
    }
  }
}).observe(list, { childList: true });

function render(): void {
  for (const r of state.rollouts) {
    if (rendered.has(r.id)) continue;
    rendered.add(r.id);
    const li = document.createElement("li");
    li.dataset.seq = String(r.seq);
    li.textContent = `#${r.seq} ${r.id} reward ${r.reward}`;
    // In seq order, like the app's list (a live event can overtake the replayed tail after a reconnect).
    const next = [...list.children].find((c) => Number((c as HTMLElement).dataset.seq) > r.seq) ?? null;
    list.insertBefore(li, next);
  }
  statusLine.textContent = `${state.status ?? "?"} · ${phase} · ${state.rollouts.length} rollouts`;
}

const pollMs = Number(params.get("poll") ?? 0);
const fold = (events: ServedRunEvent[]) => {
  for (const e of events) if (e.type === "rollout.finished") live.emittedAt[e.seq] = e.ts;
  state = runReducer(state, { type: "events", events });
  render();
};

if (pollMs > 0) {
  // The polling baseline (bench/live-latency.ts): read the stored events every pollMs, as a UI without a
  // push channel does. Needs the web process's POLL_ENDPOINT.
  phase = "polling";
  const poll = async () => {
    const res = await fetch(`/poll?run=${encodeURIComponent(runId)}&after=${state.contiguousSeq}`);
    if (res.ok) fold((await res.json()) as ServedRunEvent[]);
  };
  setInterval(() => void poll(), pollMs);
} else {
  follow();
}

function follow(): void {
  followRunLive({
    socket,
    runId,
    resumeFrom: () => state.contiguousSeq,
    onEvents: fold,
    onStatus: (status) => {
      state = runReducer(state, { type: "status", ...status });
      render();
    },
    onPhase: (p) => {
      phase = p;
      render();
    },
  });
}
