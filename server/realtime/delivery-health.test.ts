import { describe, expect, it } from "vitest";
import { DeliveryHealth, staleMsFor } from "./delivery-health";
import type { RollbookIo } from "./io";
import type { RunDeliveryMessage } from "@contracts/socket-events";

/** Just enough of socket.io's server for the health tracker: local rooms and local emits, recorded. */
function fakeIo(rooms: string[]) {
  const sent: { room: string; msg: RunDeliveryMessage }[] = [];
  const io = {
    of: () => ({ adapter: { rooms: new Map(rooms.map((r) => [r, new Set(["s"])])) } }),
    local: { to: (room: string) => ({ emit: (_: string, msg: RunDeliveryMessage) => sent.push({ room, msg }) }) },
  } as unknown as RollbookIo;
  return { io, sent };
}

describe("delivery health (issue 17 finding 5)", () => {
  it("is delayed while the database fails or does not answer, live again after a round trip", () => {
    let now = 1_000;
    const h = new DeliveryHealth({ staleMs: 8_000, now: () => now });
    expect(h.current().state).toBe("live");
    now = 3_000;
    h.ok();
    now = 5_000;
    h.failed();
    expect(h.current()).toEqual({ state: "delayed", since: 3_000, delayedMs: 2_000, reason: "database unreachable" });
    now = 25_000;
    expect(h.current().delayedMs).toBe(22_000);
    h.ok();
    expect(h.current()).toEqual({ state: "live", since: 25_000, delayedMs: 0, reason: null });
    // A hung link fails nothing: no successful round trip for staleMs is delayed too.
    now = 25_000 + 8_001;
    expect(h.current()).toMatchObject({ state: "delayed", reason: "database not answering", delayedMs: 8_001 });
  });

  it("tells this process's run rooms at once when it changes, and on every heartbeat; other rooms hear nothing", () => {
    let now = 0;
    const h = new DeliveryHealth({ staleMs: 8_000, heartbeatMs: 60_000, now: () => now });
    const { io, sent } = fakeIo(["run:a", "run:b", "user:u", "socket-id"]);
    h.attach(io);
    h.failed();
    expect(sent.map((s) => [s.room, s.msg.runId, s.msg.state])).toEqual([
      ["run:a", "a", "delayed"],
      ["run:b", "b", "delayed"],
    ]);
    h.failed(); // unchanged: no second message until the heartbeat
    expect(sent).toHaveLength(2);
    now = 1_000;
    h.ok();
    expect(sent.slice(2).map((s) => s.msg.state)).toEqual(["live", "live"]);
    h.broadcast();
    expect(sent).toHaveLength(6);
    h.close();
  });

  it("stays patient for longer leases", () => {
    expect(staleMsFor(6_000)).toBe(8_000);
    expect(staleMsFor(30_000)).toBe(40_000);
  });
});
