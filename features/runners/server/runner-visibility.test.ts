import { describe, expect, it } from "vitest";
import { seesRunnerDetails } from "./runner-visibility";

const instance = { workspaceId: null };
const workspaceA = { workspaceId: "A" };

describe("who sees a runner's details", () => {
  it("the operator sees every runner, a run without one included", () => {
    for (const r of [instance, workspaceA, null]) expect(seesRunnerDetails(r, { workspaceId: "B", role: "viewer", operator: true })).toBe(true);
  });

  it("an admin or owner sees their own workspace's runners, never the instance's (every sign-up owns a workspace)", () => {
    expect(seesRunnerDetails(workspaceA, { workspaceId: "A", role: "admin", operator: false })).toBe(true);
    expect(seesRunnerDetails(workspaceA, { workspaceId: "A", role: "owner", operator: false })).toBe(true);
    expect(seesRunnerDetails(instance, { workspaceId: "A", role: "owner", operator: false })).toBe(false);
    expect(seesRunnerDetails(workspaceA, { workspaceId: "B", role: "owner", operator: false })).toBe(false);
    expect(seesRunnerDetails(null, { workspaceId: "A", role: "owner", operator: false })).toBe(false);
  });

  it("members and viewers see no runner's details", () => {
    for (const role of ["viewer", "member"] as const) expect(seesRunnerDetails(workspaceA, { workspaceId: "A", role, operator: false })).toBe(false);
  });
});
