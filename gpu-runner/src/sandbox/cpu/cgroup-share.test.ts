/**
 * The cgroup share on the machine's real cgroup hierarchy (cgroup v1's cpu controller here and on CI,
 * writable as root; v2 where that is what the machine has): the tree and its weights, real processes
 * placed by hostile workspace and run ids, groups removed as their last process leaves, what a dead runner
 * left removed at start, and nothing left after close. Skipped where the runner could not make cgroups.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { detectCgroup } from "./cgroup-detect";
import { CgroupShare } from "./cgroup-share";
import { startTicks } from "./proc";
import { SERVICE_WEIGHT } from "./share";

const found = detectCgroup();
const target = found.ok ? found.target : null;
if (!target) console.warn(`cgroup-share.test: skipped, no cgroup to use: ${found.ok ? "" : found.reason}`);

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
});

function sleeper(): number {
  const c = spawn("sleep", ["60"], { stdio: "ignore" });
  children.push(c);
  return c.pid as number;
}

/** SIGKILL, and wait until the kernel has reaped it (Node reaps its children). */
async function killed(pid: number): Promise<void> {
  process.kill(pid, "SIGKILL");
  await expect.poll(() => fs.existsSync(`/proc/${pid}`)).toBe(false);
}

/** The process's cgroup on the share's hierarchy, as the kernel reports it. */
function cgroupOf(pid: number): string {
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8").split("\n");
  const line = target!.version === 2 ? lines.find((l) => l.startsWith("0::")) : lines.find((l) => l.split(":")[1]?.split(",").includes("cpu"));
  return line!.split(":").slice(2).join(":");
}

const weight = (dir: string) => Number(fs.readFileSync(path.join(dir, target!.version === 2 ? "cpu.weight" : "cpu.shares"), "utf8"));
const groups = (dir: string) => fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();

describe.skipIf(!target)("CgroupShare on the real hierarchy", () => {
  it("makes the tree with the engine weighted above the sandboxes, places hostile ids, and removes groups as they empty", async () => {
    const lines: string[] = [];
    const share = new CgroupShare(target!, { log: (l) => lines.push(l) });
    share.init();
    try {
      expect(groups(share.instance)).toEqual(["sandboxes", "service"]);
      expect(weight(share.service)).toBe(SERVICE_WEIGHT * weight(share.sandboxes));
      const [a1, a2, b1] = [sleeper(), sleeper(), sleeper()];
      const hostileWs = "../../../etc\nx";
      share.assign(a1, { workspaceId: hostileWs, runId: "../run/1" });
      share.assign(a2, { workspaceId: hostileWs, runId: "run 2" });
      share.assign(b1, { workspaceId: "ws-b", runId: "../run/1" });
      const wsDirs = groups(share.sandboxes).filter((n) => n !== "other");
      expect(wsDirs).toHaveLength(2);
      for (const ws of wsDirs) expect(ws).toMatch(/^ws-[a-z0-9_-]*-[0-9a-f]{12}$/);
      // Each process is where the share put it, under the runner's tree and nowhere else.
      const aRun = share.placeOf(a1)!;
      expect(aRun.startsWith(share.sandboxes + "/")).toBe(true);
      expect(path.relative(share.sandboxes, aRun).split("/")).toHaveLength(2);
      expect(cgroupOf(a1).endsWith("/" + path.relative(target!.base, aRun))).toBe(true);
      expect(path.dirname(share.placeOf(a2)!)).toBe(path.dirname(aRun)); // same workspace, another run
      expect(share.placeOf(a2)).not.toBe(aRun);
      expect(path.dirname(share.placeOf(b1)!)).not.toBe(path.dirname(aRun));

      // Released: back to other/; its run's group goes, the workspace's stays while another run is placed.
      share.release(a1);
      expect(cgroupOf(a1).endsWith("/sandboxes/other")).toBe(true);
      expect(fs.existsSync(aRun)).toBe(false);
      expect(fs.existsSync(path.dirname(aRun))).toBe(true);
      // Reassigned to another workspace: moved, and the old workspace's group goes with its last run.
      share.assign(a2, { workspaceId: "ws-b", runId: "../run/1" });
      expect(share.placeOf(a2)).toBe(share.placeOf(b1));
      expect(fs.existsSync(path.dirname(aRun))).toBe(false);
      // A process that exited is forgotten and its group removed.
      const bRun = share.placeOf(b1)!;
      for (const pid of [a1, a2, b1]) await killed(pid);
      share.forget(a2);
      share.forget(b1);
      expect(fs.existsSync(bRun)).toBe(false);
      expect(groups(share.sandboxes)).toEqual(["other"]);
      expect(lines.filter((l) => !l.includes("a previous runner left"))).toEqual([]);
    } finally {
      await share.close();
    }
    expect(fs.existsSync(share.instance)).toBe(false);
  });

  it("places the engine in service/, and close() leaves no group behind even with processes still placed", async () => {
    const share = new CgroupShare(target!, { log: () => {} });
    share.init();
    const engine = sleeper();
    const sandbox = sleeper();
    share.placeService(engine);
    share.assign(sandbox, { workspaceId: "w", runId: "r" });
    expect(cgroupOf(engine).endsWith("/service")).toBe(true);
    expect(share.servicePids()).toEqual([engine]);
    const closing = share.close();
    // The runner kills its processes as it closes; close() waits for them to leave their groups.
    process.kill(engine, "SIGKILL");
    process.kill(sandbox, "SIGKILL");
    await closing;
    expect(fs.existsSync(share.instance)).toBe(false);
  });

  it("removes at start what a runner that is gone left behind, and leaves a live runner's tree alone", async () => {
    const base = target!.base;
    // A dead runner: a pid that is not running now (the kernel's pid_max is far above any live one here).
    const dead = path.join(base, "rollbook-4194000-12345");
    const live = path.join(base, `rollbook-1-${startTicks(1)}`);
    const reused = path.join(base, "rollbook-1-999999999"); // pid 1 is alive, but started at another time: a reused pid
    for (const dir of [path.join(dead, "sandboxes/ws-a-0123456789ab/run-b-0123456789ab"), path.join(live, "sandboxes"), path.join(reused, "service")]) fs.mkdirSync(dir, { recursive: true });
    const lines: string[] = [];
    const share = new CgroupShare(target!, { log: (l) => lines.push(l) });
    try {
      share.init();
      expect(fs.existsSync(dead)).toBe(false);
      expect(fs.existsSync(reused)).toBe(false);
      expect(fs.existsSync(live)).toBe(true);
      expect(lines.join("\n")).toMatch(/removed \d+ groups a previous runner left: .*rollbook-4194000-12345/);
      expect(lines.join("\n")).toContain("rollbook-1-999999999");
    } finally {
      await share.close();
      for (const dir of [path.join(live, "sandboxes"), live]) fs.rmdirSync(dir);
    }
  });
});
