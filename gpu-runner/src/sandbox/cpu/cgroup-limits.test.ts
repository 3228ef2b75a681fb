/**
 * The rollout limits under real CPU groups (the runner's cgroup share, on this machine's cgroup hierarchy),
 * with a workspace's group capped at a fifth of one CPU (cfs quota on v1, cpu.max on v2) so that its
 * rollouts are starved for certain, whatever else the machine is doing:
 * - the CPU limit counts the rollout's own CPU time: a loop stopped by limits.cpu_timeout_ms of 500 ms
 *   ran about five times that on the clock (isolated-vm's own figure, time inside the isolate, would have
 *   stopped it after ~500 ms of the clock);
 * - a rollout whose wall clock ran out while it was starved fails as `starved`, saying what CPU it got;
 * - a rollout awaiting a model call that never answers is not runnable, so it is a plain `timeout` even in
 *   the starved group.
 * Real sandbox processes, real isolated-vm; the model is a host callback. Skipped without cgroups.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LimitsConfig } from "../../../../contracts";
import { compileExperiment, type CompiledExperiment } from "../../experiment/compile";
import { sandboxPool } from "../pool";
import { runRollout, type RolloutHost } from "../run-rollout";
import { detectCgroup } from "./cgroup-detect";
import type { CgroupShare } from "./cgroup-share";
import { closeCpuShare, openCpuShare } from "./open";
import type { SandboxPlacement } from "./share";

const usable = detectCgroup().ok;
if (!usable) console.warn("cgroup-limits.test: skipped, the runner cannot make cgroups here");

const HEADER = `import type { RolloutContext } from "rollbook";\n`;
const REWARD = `export default function reward() { return 1; }\n`;
const SCENARIO = `${HEADER}export default async function rollout(ctx: RolloutContext<{ spin?: boolean; chat?: boolean }>) {
  if (ctx.task.spin) for (;;) await null;
  if (ctx.task.chat) await ctx.chat([{ role: "user", content: "hi" }]);
  return "ok";
}
`;
const host: RolloutHost = {
  chat: () => new Promise(() => {}), // never answers
  judge: () => Promise.reject(new Error("no judge")),
  mcpList: async () => [],
  mcpCall: () => Promise.reject(new Error("no MCP")),
};

let share: CgroupShare;
let compiled: CompiledExperiment;

/**
 * A workspace whose group may use a fifth of one CPU. Made anew before each rollout: the share removes a
 * workspace's group when its last process leaves.
 */
function starvedWorkspace(workspaceId: string): SandboxPlacement {
  const placement = { workspaceId, runId: "run-1" };
  const ws = path.dirname(share.runDir(placement));
  fs.mkdirSync(ws, { recursive: true });
  if (share.mode === "cgroup-v2") fs.writeFileSync(path.join(ws, "cpu.max"), "20000 100000");
  else fs.writeFileSync(path.join(ws, "cpu.cfs_quota_us"), "20000");
  return placement;
}

async function rollout(task: object, limits: Partial<LimitsConfig>, placement: SandboxPlacement) {
  return runRollout({
    compiled,
    task,
    split: "train",
    step: 1,
    group: 0,
    rolloutIndex: 0,
    limits: LimitsConfig.parse({ memory_mb: 64, ...limits }),
    host,
    mcpServers: [],
    getMessages: () => [],
    placement,
  });
}

describe.skipIf(!usable)("rollout limits inside a starved CPU group", () => {
  beforeAll(async () => {
    share = openCpuShare({ mode: "cgroup" }, () => {}) as CgroupShare;
    const r = await compileExperiment({ "scenario.ts": SCENARIO, "reward.ts": REWARD });
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    compiled = r.compiled;
  });
  afterAll(async () => {
    sandboxPool.closeAll();
    await closeCpuShare();
  });

  it("counts the rollout's own CPU time against limits.cpu_timeout_ms", async () => {
    // A first rollout starts the process; the loop reuses it, so its figures are the loop's alone.
    expect((await rollout({}, { rollout_timeout_ms: 60_000 }, starvedWorkspace("ws-cpu-limit"))).error).toBeNull();
    const o = await rollout({ spin: true }, { cpu_timeout_ms: 500, rollout_timeout_ms: 60_000 }, starvedWorkspace("ws-cpu-limit"));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("CPU timeout") });
    // 500 ms of CPU at a fifth of a CPU: about 2.5 s on the clock. Stopped on the clock, it would be ~0.5 s.
    expect(o.durationMs).toBeGreaterThan(1_500);
    expect(o.cpu!.cpuMs).toBeGreaterThan(450);
    expect(o.cpu!.cpuMs).toBeLessThan(o.durationMs / 2);
    expect(o.cpu!.waitMs).toBeGreaterThan(o.cpu!.cpuMs);
  }, 120_000);

  it("says `starved`, with the CPU it got, when its wall clock ran out while it waited for a CPU", async () => {
    const o = await rollout({ spin: true }, { cpu_timeout_ms: 30_000, rollout_timeout_ms: 2_000 }, starvedWorkspace("ws-starved"));
    expect(o.error?.kind).toBe("starved");
    expect(o.error?.message).toMatch(
      /^starved of CPU: the wall-clock limit of 2\.0 s \(limits\.rollout_timeout_ms\) ran out while the runner's CPUs were busy: the rollout got 0\.\d s of CPU in 2\.\d s and waited 1\.\d s for one; waited 0\.0 s for an engine slot/,
    );
  }, 120_000);

  it("keeps a rollout that was not asking for the CPU (awaiting the model) a plain timeout", async () => {
    const o = await rollout({ chat: true }, { rollout_timeout_ms: 2_000 }, starvedWorkspace("ws-awaiting"));
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("wall-clock timeout: limit of 2.0 s reached") });
  }, 120_000);
});
