/**
 * The browser half of the pages chaos test (server/chaos/pages.servertest.ts): the run page's header as
 * the app decides it — status folded by attempt (run-state.ts / status-fold.ts) from the live subscription
 * (run-live.ts) and from a polled server snapshot (as the page polls runs.get, at run-poll.ts's pace), the
 * Stop and Resume buttons (run-actions.ts), "not found" said once, and the delivery indicator
 * (delivery-view.ts) — over a real socket.io connection to server/test/delivery-web.ts. Without Next: the
 * server tests do not build the app. Reads ?run=<id>&token=<api token>. Exposes window.__page (what it shows).
 */
import { io } from "socket.io-client";
import { followRunLive } from "@/features/run-view";
import { initialRunState, runReducer, type RunViewState } from "@/features/run-view";
import { runActions } from "@/features/run-view";
import { runPollInterval } from "@/features/run-view";
import { DeliveryTracker, deliveryView } from "@/features/run-view";
import { keepReconnecting, type RollbookSocket } from "@/components/socket";

declare global {
  interface Window {
    __page: {
      shown: () => { status: string; stop: boolean; resume: boolean; delivery: string; tone: string; attempt: number; phase: string; subscribed: boolean };
      /** Every status text the page showed, in order (a flip to "queued" would be in it). */
      history: string[];
    };
  }
}

const params = new URLSearchParams(location.search);
const runId = params.get("run") ?? "";
const socket: RollbookSocket = keepReconnecting(io({ transports: ["websocket"], reconnectionDelayMax: 1_000, auth: { token: params.get("token") } }));
let state: RunViewState = initialRunState;
let phase: "loading" | "live" | "offline" = "loading";
let notFound = false;
const tracker = new DeliveryTracker(Date.now());
const history: string[] = [];
const el = (id: string) => document.getElementById(id)!;

function shown() {
  const status = notFound ? "not found" : (state.status ?? "loading");
  const actions = runActions(notFound ? null : state.status, "train", true);
  const view = deliveryView({ phase, status: state.status, tracker, now: Date.now() });
  // Subscribed: the server's first delivery message comes right after it joined the page to the run's room.
  return { status, ...actions, delivery: view.label, tone: view.tone, attempt: state.attempt, phase, subscribed: tracker.report !== null };
}

function render(): void {
  const s = shown();
  if (history.at(-1) !== s.status) history.push(s.status);
  el("status").textContent = s.status;
  el("delivery").textContent = s.delivery;
  el("stop").hidden = !s.stop;
  el("resume").hidden = !s.resume;
}
// What the test reads is what the DOM shows (rendered first, so it is current).
window.__page = {
  shown: () => {
    render();
    const s = shown();
    return { ...s, status: el("status").textContent ?? "", delivery: el("delivery").textContent ?? "", stop: !el("stop").hidden, resume: !el("resume").hidden };
  },
  history,
};
setInterval(render, 250);

// runs.get, as the page polls it: the server's snapshot, folded by attempt; a 404 is final.
async function poll(): Promise<void> {
  let status: string | undefined;
  let error: unknown = null;
  try {
    const res = await fetch(`/run-snapshot?run=${encodeURIComponent(runId)}`);
    if (res.status === 404) error = { data: { code: "NOT_FOUND" } };
    else if (res.ok) {
      const snap = (await res.json()) as { status: string; attempt: number; lastSeq: number };
      status = snap.status;
      state = runReducer(state, { type: "status", status: snap.status as never, attempt: snap.attempt, lastSeq: snap.lastSeq });
    }
  } catch (e) {
    error = e;
  }
  if (!status && (error as { data?: { code?: string } } | null)?.data?.code === "NOT_FOUND") notFound = true;
  render();
  const next = notFound ? false : runPollInterval(state.status ?? status, error);
  if (next !== false) setTimeout(() => void poll(), next);
}
void poll();

followRunLive({
  socket,
  runId,
  resumeFrom: () => state.contiguousSeq,
  onEvents: (events) => {
    state = runReducer(state, { type: "events", events });
    render();
  },
  onStatus: (status) => {
    state = runReducer(state, { type: "status", ...status });
    render();
  },
  onPhase: (p) => {
    if (p === "live") tracker.heard(Date.now());
    phase = p;
    render();
  },
  onHeard: () => tracker.heard(Date.now()),
  onDelivery: (d) => tracker.reported(d, Date.now()),
});
