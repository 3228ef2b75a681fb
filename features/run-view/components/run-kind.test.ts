import { describe, expect, it } from "vitest";
import { knownRunKind } from "./run-kind";
import { runActions } from "./run-actions";

describe("knownRunKind", () => {
  it("is unknown (not train) while neither the row nor the live stream has said it", () => {
    expect(knownRunKind(undefined, null)).toBeNull();
    // A stopped dry run whose status arrived before its row offers no Resume meanwhile.
    expect(runActions("stopped", knownRunKind(undefined, null) ?? "unknown", true).resume).toBe(false);
  });

  it("is the row's kind, or the started event's until the row loads", () => {
    expect(knownRunKind(undefined, { kind: "dry-run" })).toBe("dry-run");
    expect(knownRunKind({ kind: "eval" }, { kind: "eval" })).toBe("eval");
    expect(knownRunKind({ kind: "train" }, null)).toBe("train");
  });
});
