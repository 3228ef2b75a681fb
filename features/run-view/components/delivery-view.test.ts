import { describe, expect, it } from "vitest";
import { DeliveryTracker, SILENT_AFTER_MS, deliveryView } from "./delivery-view";

const msg = (state: "live" | "delayed", delayedMs = 0) => ({
  runId: "r",
  state,
  since: 0,
  delayedMs,
  reason: state === "delayed" ? "database unreachable" : null,
});

describe("the live indicator tells delivery health (issue 17 finding 5)", () => {
  it("says delayed, counting on from the server's figure, when the server says the database is unreachable", () => {
    const t = new DeliveryTracker(0);
    t.reported(msg("delayed", 4_000), 1_000);
    const v = deliveryView({ phase: "live", status: "running", tracker: t, now: 3_000 });
    expect(v).toEqual({ tone: "delayed", label: "delayed 6 s: database unreachable" });
    t.reported(msg("live"), 3_500);
    expect(deliveryView({ phase: "live", status: "running", tracker: t, now: 4_000 }).tone).toBe("live");
  });

  it("says delayed when nothing at all was heard for a while from an active run's stream, though the socket is up", () => {
    const t = new DeliveryTracker(0);
    expect(deliveryView({ phase: "live", status: "running", tracker: t, now: SILENT_AFTER_MS - 1 }).tone).toBe("live");
    const v = deliveryView({ phase: "live", status: "running", tracker: t, now: SILENT_AFTER_MS + 5_000 });
    expect(v.tone).toBe("delayed");
    expect(v.label).toBe("delayed 15 s: no word from the server");
    t.heard(SILENT_AFTER_MS + 5_000);
    expect(deliveryView({ phase: "live", status: "running", tracker: t, now: SILENT_AFTER_MS + 6_000 }).tone).toBe("live");
    // An ended run has nothing to deliver: silence is fine.
    expect(deliveryView({ phase: "live", status: "completed", tracker: new DeliveryTracker(0), now: 60_000 }).tone).toBe("synced");
  });

  it("socket phases and a lost runner keep their words", () => {
    const t = new DeliveryTracker(0);
    expect(deliveryView({ phase: "offline", status: "running", tracker: t, now: 0 }).label).toBe("reconnecting…");
    expect(deliveryView({ phase: "loading", status: null, tracker: t, now: 0 }).tone).toBe("loading");
    expect(deliveryView({ phase: "live", status: "lost", tracker: t, now: 1 }).label).toBe("no events from the runner");
    // An ART run has no runner: its client went quiet.
    expect(deliveryView({ phase: "live", status: "lost", tracker: t, now: 1, kind: "art" }).label).toBe("no word from the ART client");
    // An ART run whose client went quiet is not "live": nothing is coming (art-idle.ts decides when).
    expect(deliveryView({ phase: "live", status: "running", tracker: t, now: 1, kind: "art", idle: true })).toEqual({ tone: "idle", label: "waiting for the ART client" });
    expect(deliveryView({ phase: "live", status: "completed", tracker: t, now: 1, kind: "art", idle: true }).tone).toBe("synced");
  });
});
