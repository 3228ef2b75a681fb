import { describe, expect, it } from "vitest";
import { RunConfig, type RunEvent } from "@contracts";
import { allowed, statusAfterEvents, TRANSITIONS } from "./transitions";

let seq = 0;
const started = (attempt?: number): RunEvent => ({
  run_id: "r",
  seq: ++seq,
  ts: 1_000 + seq,
  ...(attempt ? { attempt } : {}),
  type: "run.started",
  payload: { kind: "train", config: RunConfig.parse({}), model: "m", resumed_from_step: 0 },
});
const finished = (status: "completed" | "failed" | "stopped", attempt?: number, error: string | null = null): RunEvent => ({
  run_id: "r",
  seq: ++seq,
  ts: 1_000 + seq,
  ...(attempt ? { attempt } : {}),
  type: "run.finished",
  payload: { status, error, diagnostics: [] },
});
const log = (attempt?: number): RunEvent => ({ run_id: "r", seq: ++seq, ts: 1_000 + seq, ...(attempt ? { attempt } : {}), type: "run.log", payload: { level: "info", message: "x" } });

describe("the transition table", () => {
  it("allows each transition only from its statuses", () => {
    expect(allowed("start", "queued")).toBe(true);
    expect(allowed("start", "stopped")).toBe(false);
    expect(allowed("resume", "stopped")).toBe(true);
    expect(allowed("resume", "running")).toBe(false);
    expect(allowed("stop", "lost")).toBe(true);
    expect(allowed("stop", "completed")).toBe(false);
    expect(TRANSITIONS.lose).toEqual({ from: ["running"], to: "lost" });
  });
});

describe("what the runner's events do to a run's status", () => {
  it("finding 1: an older attempt's late run.finished cannot end the attempt resumed after it", () => {
    // Stopped while the runner was unreachable (attempt 1), then resumed as attempt 2; the runner's stop of
    // attempt 1 (seq 136) reaches ingestion only after the resume was recorded.
    const now = { status: "running" as const, error: null, attempt: 2, attemptOpen: true };
    const next = statusAfterEvents(now, [finished("stopped", 1), started(2), log(2)]);
    expect(next).toMatchObject({ status: "running", attempt: 2, attemptOpen: true, changed: false });
  });

  it("the current attempt's run.finished ends it and closes the attempt", () => {
    const next = statusAfterEvents({ status: "running", error: null, attempt: 2, attemptOpen: true }, [finished("completed", 2)]);
    expect(next).toMatchObject({ status: "completed", attempt: 2, attemptOpen: false, changed: true });
    expect(next.finishedAt).toBeInstanceOf(Date);
  });

  it("a run ended here keeps its first verdict; the runner's own end still closes the attempt", () => {
    const next = statusAfterEvents({ status: "stopped", error: "stopped while the runner was unreachable", attempt: 1, attemptOpen: true }, [log(1), finished("completed", 1)]);
    expect(next).toMatchObject({ status: "stopped", error: "stopped while the runner was unreachable", attemptOpen: false, changed: true });
  });

  it("events from a lost run's runner make it running again; run.started moves a queued run", () => {
    expect(statusAfterEvents({ status: "lost", error: null, attempt: 1, attemptOpen: true }, [log()])).toMatchObject({ status: "running", changed: true });
    const next = statusAfterEvents({ status: "queued", error: null, attempt: 1, attemptOpen: false }, [started()]);
    expect(next).toMatchObject({ status: "running", attemptOpen: true, changed: true });
    expect(next.startedAt).toBeInstanceOf(Date);
  });

  it("a newer attempt than the database knows (a resume it never recorded) becomes the current one", () => {
    const next = statusAfterEvents({ status: "stopped", error: "x", attempt: 1, attemptOpen: false }, [started(2)]);
    expect(next).toMatchObject({ status: "running", error: null, attempt: 2, attemptOpen: true, changed: true });
  });

  it("untagged events (logs from before attempts) belong to attempt 1", () => {
    expect(statusAfterEvents({ status: "running", error: null, attempt: 1, attemptOpen: true }, [finished("failed", undefined, "boom")])).toMatchObject({
      status: "failed",
      error: "boom",
      attemptOpen: false,
    });
    expect(statusAfterEvents({ status: "running", error: null, attempt: 2, attemptOpen: true }, [finished("failed", undefined, "boom")])).toMatchObject({
      status: "running",
      changed: false,
    });
  });
});
