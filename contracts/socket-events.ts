/**
 * socket.io event types, shared by the browser client and the server (socket.io's generics), plus the zod
 * schemas every incoming payload is validated with. Import only types and zod here: the browser bundles it.
 *
 * Protocol: the client emits `run:subscribe` { runId, afterSeq }; the server joins it to the room
 * `run:<id>`, sends every stored event with seq > afterSeq (in order), a `run:status`, and then live events
 * as they are ingested. Events may arrive twice around the switch from stored to live: dedupe by seq.
 */
import { z } from "zod";
import { type RunStatus, type ServedRunEvent } from "@contracts";

export const RunSubscribeInput = z.object({
  runId: z.string().min(1).max(128),
  afterSeq: z.number().int().min(0).default(0),
});
export type RunSubscribeInput = z.input<typeof RunSubscribeInput>;

export const RunUnsubscribeInput = z.object({ runId: z.string().min(1).max(128) });
export type RunUnsubscribeInput = z.infer<typeof RunUnsubscribeInput>;

export interface RunStatusMessage {
  runId: string;
  status: RunStatus;
  error: string | null;
  /** The run's stored last seq when this status was read. */
  lastSeq: number;
  /** Status `lost`: since when its runner has not answered (ms since the epoch). */
  lostSince?: number | null;
  /** The run's attempt (1, then +1 for each resume or move): a page's view of an older attempt is out of date. */
  attempt?: number;
}

/** A pathology flag raised (or extended) on a run: features/flags/server/detect/store.ts. */
export interface RunFlagMessage {
  id: string;
  runId: string;
  rule: string;
  /** info: not a problem (converged, length moving with the reward), never alerted; warning/critical: alerted. */
  severity: "info" | "warning" | "critical";
  message: string;
  firstStep: number;
  lastStep: number;
  steps: number[];
  rolloutIds: string[];
  /** ISO time it was first raised. */
  raisedAt: string;
}

/**
 * Whether a run's events can flow right now, as the web process the page is connected to sees it
 * (server/realtime/delivery-health.ts): sent to the run's room when it changes and every few seconds as a
 * heartbeat, so a page that hears nothing at all for a while knows that too (features/run-view/components/delivery-view.ts).
 */
export interface RunDeliveryMessage {
  runId: string;
  state: "live" | "delayed";
  /** Since when (ms since the epoch, the server's clock) it has been in this state. */
  since: number;
  /** How long it had been delayed when sent (0 when live): the page counts on from it, whatever its clock. */
  delayedMs: number;
  /** Why it is delayed, in words for the page ("database unreachable"); null when live. Never a raw error. */
  reason: string | null;
}

/** `retry`: the refusal was the server's trouble (its database), not the run's: ask again in a moment. */
export type SubscribeAck = { ok: true; lastSeq: number; status: RunStatus; attempt: number } | { ok: false; error: string; retry?: boolean };

export interface ServerToClientEvents {
  "run:event": (event: ServedRunEvent) => void;
  "run:status": (status: RunStatusMessage) => void;
  "run:flag": (flag: RunFlagMessage) => void;
  "run:delivery": (delivery: RunDeliveryMessage) => void;
}

export interface ClientToServerEvents {
  /** The optional ack reports the stored tail that was sent (or why the subscription was refused). */
  "run:subscribe": (input: RunSubscribeInput, ack?: (res: SubscribeAck) => void) => void;
  "run:unsubscribe": (input: RunUnsubscribeInput) => void;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface InterServerEvents {}

export interface SocketData {
  /** The user the handshake authenticated (server/realtime/socket-server.ts). */
  userId?: string;
  /** Set when they connected with an API token: it reaches only that workspace's runs. */
  tokenWorkspaceId?: string | null;
  /** The workspace of each run this socket subscribed to (server/realtime/evict.ts). */
  runWorkspaces?: Record<string, string>;
}

export const runRoom = (runId: string) => `run:${runId}`;
/** Every socket of a user, for taking them out of a workspace's rooms when they leave it. */
export const userRoom = (userId: string) => `user:${userId}`;
