/** An ART run is named by its model; every other run by its experiment and version. */
import { describe, expect, it } from "vitest";
import { runName } from "./run-name";

describe("runName", () => {
  it("an ART run is its model's name, with its project as the detail (not '<project> v1')", () => {
    expect(runName({ kind: "art", experimentName: "my-project", versionNumber: 1, artName: "agent-001" })).toEqual({ name: "agent-001", detail: "my-project" });
  });

  it("other runs, and an ART run whose client info is unreadable, keep experiment and version", () => {
    expect(runName({ kind: "train", experimentName: "say-the-word", versionNumber: 3, artName: null })).toEqual({ name: "say-the-word", detail: "v3" });
    expect(runName({ kind: "art", experimentName: "p", versionNumber: 1, artName: null })).toEqual({ name: "p", detail: "v1" });
  });
});
