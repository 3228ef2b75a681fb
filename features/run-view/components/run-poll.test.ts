import { describe, expect, it } from "vitest";
import { POLL_ACTIVE_MS, POLL_ENDED_MS, POLL_QUEUED_MS, isNotFound, runPollInterval } from "./run-poll";

describe("run page polling (issue 17 finding 4)", () => {
  it("keeps asking, slowly, once the run ended: a resume elsewhere is seen", () => {
    for (const s of ["failed", "stopped", "completed"]) expect(runPollInterval(s, null)).toBe(POLL_ENDED_MS);
    expect(runPollInterval("running", null)).toBe(POLL_ACTIVE_MS);
    expect(runPollInterval("lost", null)).toBe(POLL_ACTIVE_MS);
    expect(runPollInterval("queued", null)).toBe(POLL_QUEUED_MS);
  });

  it("never asks again for a run that does not exist; other errors are retried", () => {
    const notFound = { data: { code: "NOT_FOUND" } };
    expect(isNotFound(notFound)).toBe(true);
    expect(runPollInterval(undefined, notFound)).toBe(false);
    expect(runPollInterval(undefined, { data: { code: "INTERNAL_SERVER_ERROR" } })).toBe(POLL_ACTIVE_MS);
    expect(runPollInterval(undefined, null)).toBe(POLL_ACTIVE_MS);
  });
});
