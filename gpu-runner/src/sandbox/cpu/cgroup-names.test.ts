/**
 * Names that go into cgroup paths come from workspace and run ids (user data): hostile ones must produce a
 * plain folder name under the runner's tree, and a name the encoder did not make must be refused.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { GROUP_NAME, groupPath, instanceGroup, parseInstanceGroup, runGroup, workspaceGroup } from "./cgroup-names";

const HOSTILE = [
  "..",
  "../../etc",
  "a/b",
  "/sys/fs/cgroup/cpu",
  "x\ny",
  "x\0y",
  "cgroup.procs",
  "cpu.shares",
  "",
  " ",
  ".",
  "ws-abc-0123456789ab",
  "é✓🙂",
  "A".repeat(10_000),
  "..\\..\\windows",
  "$(reboot)",
  "name\n../../x",
];

describe("cgroup names", () => {
  it("turns every hostile workspace and run id into one plain folder name", () => {
    const base = "/sys/fs/cgroup/cpu/rollbook-1-2/sandboxes";
    for (const id of HOSTILE) {
      for (const name of [workspaceGroup(id), runGroup(id, id), runGroup("ws", id)]) {
        expect(name, JSON.stringify(id)).toMatch(GROUP_NAME);
        expect(name).not.toMatch(/[./\n\0\\]/);
        expect(name.length).toBeLessThanOrEqual(41);
        const p = groupPath(base, name);
        expect(path.dirname(p)).toBe(base);
      }
    }
  });

  it("keeps a readable slug and tells apart ids that slug alike", () => {
    expect(workspaceGroup("Team-Alpha")).toMatch(/^ws-team-alpha-[0-9a-f]{12}$/);
    expect(workspaceGroup("a/b")).not.toBe(workspaceGroup("ab"));
    expect(workspaceGroup("../x")).not.toBe(workspaceGroup("x"));
    // A run's group depends on its workspace: the same run id in two workspaces is two groups.
    expect(runGroup("ws-1", "run")).not.toBe(runGroup("ws-2", "run"));
    expect(workspaceGroup("same")).toBe(workspaceGroup("same"));
  });

  it("refuses a name it did not make, and a path that would leave the base", () => {
    const base = "/sys/fs/cgroup/cpu/rollbook-1-2";
    for (const bad of ["..", "../x", "a/b", "ws-x", "x\n", "cgroup.procs", "", "/etc", "ws-abc-0123456789ab\n"]) {
      expect(() => groupPath(base, bad), JSON.stringify(bad)).toThrow(/is not one the runner makes/);
    }
    expect(groupPath(base, "sandboxes", "other")).toBe(`${base}/sandboxes/other`);
  });

  it("names an instance by pid and start time, and reads it back", () => {
    expect(instanceGroup(123, 456)).toBe("rollbook-123-456");
    expect(parseInstanceGroup("rollbook-123-456")).toEqual({ pid: 123, startTicks: 456 });
    for (const other of ["rollbook-123", "rollbook-x-1", "rollbook-1-2/..", "ws-a-0123456789ab", "rollbook-1-2\n"]) expect(parseInstanceGroup(other)).toBeNull();
    expect(() => instanceGroup(-1, 0)).toThrow(/non-negative integers/);
    expect(() => instanceGroup(1.5, 0)).toThrow(/non-negative integers/);
  });
});
