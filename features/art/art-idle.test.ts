/** An ART run reads "idle" once its client has been quiet ART_CLIENT_IDLE_MS; nothing else ever does. */
import { describe, expect, it } from "vitest";
import { ART_CLIENT_IDLE_MS, artIdleSince, idleLabel } from "./art-idle";

const now = Date.UTC(2026, 11, 3, 12, 0, 0);

describe("artIdleSince", () => {
  it("a running ART run quiet for ART_CLIENT_IDLE_MS is idle since its last call", () => {
    const last = new Date(now - ART_CLIENT_IDLE_MS);
    expect(artIdleSince({ kind: "art", status: "running", lastHeartbeatAt: last }, now)).toEqual(last);
    expect(artIdleSince({ kind: "art", status: "running", lastHeartbeatAt: last.toISOString() }, now)).toEqual(last);
  });

  it("heard from lately, another kind, another status, or never heard from: not idle", () => {
    expect(artIdleSince({ kind: "art", status: "running", lastHeartbeatAt: new Date(now - ART_CLIENT_IDLE_MS + 1) }, now)).toBeNull();
    const old = new Date(now - 10 * ART_CLIENT_IDLE_MS);
    expect(artIdleSince({ kind: "train", status: "running", lastHeartbeatAt: old }, now)).toBeNull();
    for (const status of ["lost", "stopped", "completed", null]) expect(artIdleSince({ kind: "art", status, lastHeartbeatAt: old }, now)).toBeNull();
    expect(artIdleSince({ kind: "art", status: "running", lastHeartbeatAt: null }, now)).toBeNull();
    expect(artIdleSince({ kind: "art", status: "running", lastHeartbeatAt: "not a date" }, now)).toBeNull();
  });

  it("the idle threshold is a few minutes, far below the 30 minutes after which the run is marked lost", () => {
    expect(ART_CLIENT_IDLE_MS).toBeGreaterThan(60_000); // a sampling client's sign of life comes once a minute
    expect(ART_CLIENT_IDLE_MS).toBeLessThan(30 * 60_000);
  });
});

describe("idleLabel", () => {
  it("says the time, with the date when it was another day", () => {
    const since = new Date(now - 5 * 60_000);
    expect(idleLabel(since, now)).toMatch(/^idle since \d\d:\d\d$/);
    expect(idleLabel(new Date(now - 3 * 86_400_000), now)).toMatch(/^idle since [A-Z][a-z]{2} \d{1,2}, \d\d:\d\d$/);
  });
});
