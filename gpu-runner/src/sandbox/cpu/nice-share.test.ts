/**
 * The nice fallback on real processes (Node children, which have several threads each): every thread of a
 * placed process gets the niceness its workspace's and run's busy count call for; a share that may not
 * lower a niceness (an unprivileged runner: canLower false) never does, and says an idle process is unfit
 * for a rollout that would need it, so the pool starts a fresh one.
 */
import { type ChildProcess, spawn } from "node:child_process";
import os from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { BASE_NICE, NiceShare, niceFor } from "./nice-share";
import { canLowerNice, threadIds } from "./proc";

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
});

/** A Node child: V8 and libuv give it a handful of threads, as a sandbox process has. */
async function nodeChild(): Promise<number> {
  const c = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  children.push(c);
  const pid = c.pid as number;
  await expect.poll(() => threadIds(pid).length).toBeGreaterThan(1);
  return pid;
}

const nices = (pid: number) => [...new Set(threadIds(pid).map((tid) => os.getPriority(tid)))];

describe.skipIf(process.platform !== "linux")("NiceShare", () => {
  it("weighs each workspace alike: niceness grows with the workspace's busy processes, on every thread", async () => {
    expect(niceFor(1)).toBe(BASE_NICE);
    expect(niceFor(12)).toBe(BASE_NICE + 11); // 1.25^11 ≈ 11.6: twelve at this niceness weigh about one at BASE_NICE
    expect(niceFor(10_000)).toBe(19);
    const share = new NiceShare("test", { canLower: false });
    const [a1, a2, a3, b1] = await Promise.all([nodeChild(), nodeChild(), nodeChild(), nodeChild()]);
    share.assign(a1, { workspaceId: "A", runId: "r" });
    expect(nices(a1)).toEqual([niceFor(1)]);
    share.assign(a2, { workspaceId: "A", runId: "r" });
    share.assign(a3, { workspaceId: "A", runId: "r" });
    share.assign(b1, { workspaceId: "B", runId: "r" });
    for (const pid of [a1, a2, a3]) expect(nices(pid)).toEqual([niceFor(3)]);
    expect(nices(b1)).toEqual([niceFor(1)]);
    // Two runs in a workspace halve each other's part: one process in a run of two runs weighs 1/2.
    share.release(a3);
    share.assign(a3, { workspaceId: "A", runId: "other-run" });
    expect(nices(a3)).toEqual([niceFor(3)]); // it would be niceFor(2), but this share never lowers
    expect(share.niceOf(a3)).toBe(niceFor(3));

    // Idle at niceFor(3), it is not reused for a lone rollout of a new workspace (which should get niceFor(1))...
    share.release(a3);
    expect(share.canReuse(a3, { workspaceId: "C", runId: "r" })).toBe(false);
    // ...but it is for a rollout that joins workspace A's run, whose processes are niced at least as much.
    expect(share.canReuse(a3, { workspaceId: "A", runId: "r" })).toBe(true);
    expect(share.description).toContain("a reused process that would need it is replaced");
  });

  it.skipIf(!canLowerNice())("lowers a niceness where it may (CAP_SYS_NICE), so a workspace's remaining processes get its whole part back", async () => {
    const share = new NiceShare("test", { canLower: true });
    const [a1, a2] = await Promise.all([nodeChild(), nodeChild()]);
    share.assign(a1, { workspaceId: "A", runId: "r" });
    share.assign(a2, { workspaceId: "A", runId: "r" });
    expect(nices(a1)).toEqual([niceFor(2)]);
    share.release(a2);
    expect(nices(a1)).toEqual([niceFor(1)]);
    expect(share.canReuse(a2, { workspaceId: "B", runId: "r" })).toBe(true);
  });
});
