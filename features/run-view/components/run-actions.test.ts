import { describe, expect, it } from "vitest";
import { runActions } from "./run-actions";

describe("Stop and Resume follow the status shown", () => {
  it("offers Stop while active, Resume once a train run ended or lost, nothing to viewers or before the status is known", () => {
    expect(runActions("running", "train", true)).toEqual({ stop: true, resume: false });
    expect(runActions("lost", "train", true)).toEqual({ stop: true, resume: true });
    expect(runActions("failed", "train", true)).toEqual({ stop: false, resume: true });
    expect(runActions("stopped", "eval", true)).toEqual({ stop: false, resume: false });
    expect(runActions("running", "train", false)).toEqual({ stop: false, resume: false });
    expect(runActions(null, "train", true)).toEqual({ stop: false, resume: false });
  });
});
