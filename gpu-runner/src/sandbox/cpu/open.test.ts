/**
 * Which mode the runner picks (RUNNER_CPU_SHARE, RUNNER_CGROUP), that it says so once, and the fallback
 * where the cgroup it was given cannot be used: a folder that is not a cgroup is as real a refusal as a
 * read-only cgroupfs, and the nice fallback says why in its description and its reason.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { loadEnv } from "../../env";
import { detectCgroup } from "./cgroup-detect";
import { closeCpuShare, cpuShare, openCpuShare } from "./open";

const notACgroup = fs.mkdtempSync(path.join(os.tmpdir(), "not-a-cgroup-"));
// A test that failed midway must not leave its share open for the next.
afterEach(async () => {
  for (let i = 0; i < 4; i++) await closeCpuShare();
});
afterAll(() => fs.rmSync(notACgroup, { recursive: true, force: true }));

describe("openCpuShare", () => {
  it("falls back to niceness where the named cgroup cannot be used, saying why, once", async () => {
    const lines: string[] = [];
    const share = openCpuShare({ mode: "auto", cgroup: notACgroup }, (l) => lines.push(l));
    expect(share.mode).toBe("nice");
    expect(share.reason).toMatch(/^RUNNER_CGROUP: .*not-a-cgroup-.* has no cpu.shares \(not a cgroup v1 cpu folder\)$/);
    expect(lines).toEqual([expect.stringMatching(/^CPU fair share: nice fallback \(cgroups unavailable: RUNNER_CGROUP: /)]);
    // A second runner server in the process shares it, and nothing more is logged.
    expect(openCpuShare({ mode: "auto" }, (l) => lines.push(l))).toBe(share);
    expect(lines).toHaveLength(1);
    await closeCpuShare();
    expect(cpuShare()).toBe(share); // the first server still holds it
    await closeCpuShare();
    expect(cpuShare().description).toContain("no runner server");
  });

  it("refuses to start with RUNNER_CPU_SHARE=cgroup when there are none to make", () => {
    expect(() => openCpuShare({ mode: "cgroup", cgroup: notACgroup }, () => {})).toThrow(/^RUNNER_CPU_SHARE=cgroup, but the runner cannot make CPU groups: RUNNER_CGROUP: /);
    expect(cpuShare().description).toContain("no runner server");
  });

  it("takes off and nice as asked", async () => {
    expect(openCpuShare({ mode: "off" }, () => {}).mode).toBe("off");
    await closeCpuShare();
    expect(openCpuShare({ mode: "nice" }, () => {}).mode).toBe("nice");
    await closeCpuShare();
  });

  it.skipIf(!detectCgroup().ok)("uses cgroups where the runner may make them", async () => {
    const share = openCpuShare({ mode: "auto" }, () => {});
    expect(share.mode).toMatch(/^cgroup-v[12]$/);
    expect(share.reason).toBeUndefined();
    await closeCpuShare();
  });

  it("reads the settings with errors that name them", () => {
    const base = { NODE_ENV: "test", RUNNER_TOKEN: "x".repeat(32) } as const;
    expect(loadEnv(base)).toMatchObject({ RUNNER_CPU_SHARE: "auto" });
    expect(() => loadEnv({ ...base, RUNNER_CPU_SHARE: "fast" })).toThrow(/RUNNER_CPU_SHARE is auto, cgroup, nice or off/);
    expect(() => loadEnv({ ...base, RUNNER_CGROUP: "/sys/fs/cgroup/../x" })).toThrow(/RUNNER_CGROUP is an absolute path without '\.\.'/);
    expect(() => loadEnv({ ...base, RUNNER_CGROUP: "relative/x" })).toThrow(/RUNNER_CGROUP is an absolute path/);
  });
});
