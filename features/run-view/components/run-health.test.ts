import { describe, expect, it } from "vitest";
import { ordinal } from "@/components/ui/format";
import { fieldOfError } from "@/features/runners";
import { ROLLOUT_ERROR_KINDS, isRunnerFault } from "@contracts";
import { completedHealth } from "./completed-health";

describe("queue place and register errors as the page words them", () => {
  it("ordinals", () => {
    expect([1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111].map(ordinal)).toEqual(["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]);
  });
  it("a server error naming a field lands on that field", () => {
    expect(fieldOfError("token: the runner at http://x refused this token")).toEqual({ field: "token", text: "the runner at http://x refused this token" });
    expect(fieldOfError("url: no runner answered at http://x (ECONNREFUSED)")).toMatchObject({ field: "url" });
    expect(fieldOfError("something else: broke")).toEqual({ field: null, text: "something else: broke" });
  });
});

describe("a completed run's health note", () => {
  const log = (level: "info" | "warn", message: string) => ({ seq: 1, ts: 0, level, message });

  it("is no warning when the runner lost the only failed rollouts", () => {
    expect(completedHealth({ errorCount: 1, runnerErrorCount: 1, logs: [log("info", "done")] })).toEqual({
      heading: "Completed; the runner lost some rollouts",
      rolloutErrors: 0,
      runnerErrors: 1,
      warnings: [],
    });
  });

  it("warns about the experiment's own failures, and counts the runner's apart", () => {
    expect(completedHealth({ errorCount: 3, runnerErrorCount: 1, logs: [] })).toMatchObject({ heading: "Completed with warnings", rolloutErrors: 2, runnerErrors: 1 });
    expect(completedHealth({ errorCount: 1, runnerErrorCount: 1, logs: [log("warn", "step 2: 1 of 4 groups have fewer than 2 valid rollouts")] })).toMatchObject({
      heading: "Completed with warnings",
      rolloutErrors: 0,
    });
  });

  it("says nothing about a clean run", () => {
    expect(completedHealth({ errorCount: 0, runnerErrorCount: 0, logs: [log("info", "done")] })).toBeNull();
  });

  it("files starved (its CPU, not its code) and engine_connection as the runner's failure, every other kind as the experiment's", () => {
    expect(ROLLOUT_ERROR_KINDS.filter(isRunnerFault)).toEqual(["starved", "engine_connection"]);
  });
});
