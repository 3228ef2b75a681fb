/**
 * Which cgroup the runner finds, read from /proc/self/mountinfo and /proc/self/cgroup: each case lays out
 * those two files and the cgroup folders in a temporary root, as the kernel shows them on the machines this
 * runs on (v1's cpu hierarchy beside a v2 hierarchy without the cpu controller), on a systemd machine with
 * v2 and cpu delegated, and in a container's cgroup namespace.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { detectCgroup, parseMountinfo } from "./cgroup-detect";

let roots: string[] = [];
afterEach(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
  roots = [];
});

function tree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "cgdetect-"));
  roots.push(root);
  for (const [file, text] of Object.entries(files)) {
    const full = path.join(root, file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, text);
  }
  return root;
}

const V1_AND_UNIFIED = [
  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
  "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct",
  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
].join("\n");

describe("detectCgroup", () => {
  it("takes v1's cpu hierarchy where v2 has no cpu controller (this machine's and CI's layout)", () => {
    const root = tree({
      "proc/self/mountinfo": V1_AND_UNIFIED,
      "proc/self/cgroup": "2:cpuacct:/\n1:cpu:/\n0::/\n",
      "sys/fs/cgroup/cpu/cpu.shares": "1024\n",
      "sys/fs/cgroup/unified/cgroup.controllers": "hugetlb\n",
    });
    expect(detectCgroup({ root })).toEqual({ ok: true, target: { version: 1, base: path.join(root, "sys/fs/cgroup/cpu") } });
  });

  it("takes v2 where its cpu controller is there, in the runner's own cgroup (a systemd unit)", () => {
    const unit = "system.slice/rollbook-runner.service";
    const root = tree({
      "proc/self/mountinfo": "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate",
      "proc/self/cgroup": `0::/${unit}\n`,
      [`sys/fs/cgroup/${unit}/cgroup.controllers`]: "cpuset cpu io memory pids\n",
      [`sys/fs/cgroup/${unit}/cgroup.subtree_control`]: "",
    });
    expect(detectCgroup({ root })).toEqual({ ok: true, target: { version: 2, base: path.join(root, "sys/fs/cgroup", unit) } });
  });

  it("finds its cgroup under a mount of part of the hierarchy (a container's namespace root)", () => {
    const root = tree({
      "proc/self/mountinfo": "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw",
      "proc/self/cgroup": "0::/kubepods/pod1/runner\n",
      "sys/fs/cgroup/runner/cgroup.controllers": "cpu memory\n",
    });
    expect(detectCgroup({ root })).toMatchObject({ ok: true, target: { version: 2, base: path.join(root, "sys/fs/cgroup/runner") } });
  });

  it("says why when there is nothing to use", () => {
    const none = tree({ "proc/self/mountinfo": "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw", "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/unified/cgroup.controllers": "memory pids\n" });
    expect(detectCgroup({ root: none })).toEqual({ ok: false, reason: expect.stringMatching(/cgroup v2 at .* has no cpu controller \(cgroup.controllers: "memory pids"\)/) });
    const bare = tree({ "proc/self/mountinfo": "22 1 0:21 / / rw - ext4 /dev/vda rw", "proc/self/cgroup": "0::/\n" });
    expect(detectCgroup({ root: bare })).toEqual({ ok: false, reason: "no cgroup hierarchy with the cpu controller is mounted" });
    const noProc = tree({});
    expect(detectCgroup({ root: noProc })).toEqual({ ok: false, reason: expect.stringContaining("not Linux?") });
  });

  it("checks a named cgroup (RUNNER_CGROUP) and says what is wrong with it", () => {
    const root = tree({ "srv/rollbook/cgroup.controllers": "cpu\n", "srv/plain/file": "" });
    expect(detectCgroup({ root, base: "/srv/rollbook" })).toEqual({ ok: true, target: { version: 2, base: path.join(root, "srv/rollbook") } });
    expect(detectCgroup({ root, base: "/srv/plain" })).toEqual({ ok: false, reason: expect.stringMatching(/^RUNNER_CGROUP: .*srv\/plain has no cpu.shares/) });
  });

  it("reads mount points with escaped spaces", () => {
    expect(parseMountinfo("32 31 0:29 / /sys/fs/my\\040cgroup rw - cgroup cgroup rw,cpu,cpuacct")).toEqual([
      { root: "/", point: "/sys/fs/my cgroup", fstype: "cgroup", superOptions: ["rw", "cpu", "cpuacct"] },
    ]);
  });
});
