import { afterEach, describe, expect, it, vi } from "vitest";
import type { SubscribeAck } from "@/contracts/socket-events";
import { followRunLive } from "./run-live";
import type { RollbookSocket } from "@/components/socket";

/** A connected socket whose run:subscribe answers come from `answers`, in order. */
function fakeSocket(answers: SubscribeAck[]) {
  const subscribes: number[] = [];
  const socket = {
    connected: true,
    on: () => socket,
    off: () => socket,
    emit: (name: string, input: { afterSeq: number }, ack?: (res: SubscribeAck) => void) => {
      if (name !== "run:subscribe") return;
      subscribes.push(input.afterSeq);
      ack?.(answers.shift() ?? { ok: false, error: "no more answers" });
    },
  };
  return { socket: socket as unknown as RollbookSocket, subscribes };
}

const base = { runId: "r", resumeFrom: () => 7, onEvents: () => {}, onPhase: () => {} };

describe("the live subscription", () => {
  afterEach(() => vi.useRealTimers());

  it("asks again when the server could not serve it (its database), until it is subscribed", () => {
    vi.useFakeTimers();
    const statuses: unknown[] = [];
    const { socket, subscribes } = fakeSocket([
      { ok: false, error: "could not read the run's events", retry: true },
      { ok: false, error: "could not read the run's events", retry: true },
      { ok: true, lastSeq: 9, status: "running", attempt: 2 },
    ]);
    const stop = followRunLive({ ...base, socket, onStatus: (s) => statuses.push(s) });
    expect(subscribes).toEqual([7]);
    vi.advanceTimersByTime(1_000);
    expect(subscribes).toEqual([7, 7]);
    vi.advanceTimersByTime(2_000);
    expect(subscribes).toEqual([7, 7, 7]);
    expect(statuses).toEqual([{ status: "running", attempt: 2, lastSeq: 9 }]);
    vi.advanceTimersByTime(60_000);
    expect(subscribes).toHaveLength(3);
    stop();
  });

  it("takes 'not found' as the answer: no retry", () => {
    vi.useFakeTimers();
    const { socket, subscribes } = fakeSocket([{ ok: false, error: "run r not found" }]);
    const stop = followRunLive({ ...base, socket, onStatus: () => {} });
    vi.advanceTimersByTime(60_000);
    expect(subscribes).toHaveLength(1);
    stop();
  });
});
