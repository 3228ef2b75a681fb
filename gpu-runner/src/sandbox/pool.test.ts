/**
 * The sandbox processes as the runner runs them (Linux: it reads /proc). A process is reused after a clean
 * finish and killed after a stop; one that stops answering is killed by the runner's backstop; it sees none
 * of the runner's environment and has an address-space limit.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LimitsConfig } from "../../../contracts";
import { type CompiledExperiment, compileExperiment } from "../experiment/compile";
import { addressSpaceMb, sandboxPool } from "./pool";
import { type RolloutHost, runRollout } from "./run-rollout";

const LIMITS = LimitsConfig.parse({ rollout_timeout_ms: 1_000, cpu_timeout_ms: 300, memory_mb: 48 });

async function compile(body: string): Promise<CompiledExperiment> {
  const r = await compileExperiment({
    "scenario.ts": `import type { RolloutContext } from "rollbook";\nexport default async function rollout(ctx: RolloutContext<{ spin?: boolean }>): Promise<unknown> {\n${body}\n}\n`,
    "reward.ts": `export default function reward() { return 1; }\n`,
  });
  if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
  return r.compiled;
}

/** Pids of this process's sandbox processes. */
function sandboxPids(): number[] {
  const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((l) => l.includes("--input-type=module"))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * glibc malloc arenas besides the main heap in /proc/PID/maps: each is a 64 MiB-aligned anonymous mapping, its
 * used part read-write and the rest of its 64 MiB reserved (---p).
 */
function mallocArenas(pid: number): number {
  const ARENA = 64n << 20n;
  const rows = readFileSync(`/proc/${pid}/maps`, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [range, perms, , , , name] = line.split(/\s+/);
      const [from, to] = range!.split("-").map((h) => BigInt(`0x${h}`));
      return { from: from!, to: to!, perms: perms!, anonymous: !name };
    });
  return rows.filter((r, i) => {
    if (!r.anonymous || r.perms !== "rw-p" || r.from % ARENA !== 0n) return false;
    const next = rows[i + 1];
    const end = next && next.anonymous && next.perms === "---p" && next.from === r.to ? next.to : r.to;
    return end - r.from === ARENA;
  }).length;
}

function host(onChat?: () => void): RolloutHost {
  return {
    chat: () => {
      onChat?.();
      return new Promise(() => {});
    },
    judge: () => new Promise(() => {}),
    mcpList: async () => [],
    mcpCall: () => new Promise(() => {}),
  };
}

const run = (compiled: CompiledExperiment, h: RolloutHost, task: unknown = {}) =>
  runRollout({ compiled, task, split: "train", step: 1, group: 0, rolloutIndex: 0, limits: LIMITS, host: h, mcpServers: [], getMessages: () => [] });

describe.skipIf(process.platform !== "linux")("sandbox processes", () => {
  it("are reused after a clean finish and killed after a stop", async () => {
    const compiled = await compile(`if (ctx.task.spin) for (;;) {}\nreturn "ok";`);
    expect((await run(compiled, host())).output).toBe("ok");
    const [first] = sandboxPids();
    expect(first).toBeDefined();
    expect((await run(compiled, host())).output).toBe("ok");
    expect(sandboxPids()).toEqual([first]); // the same process, reused

    const stopped = await run(compiled, host(), { spin: true });
    expect(stopped.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("CPU timeout") });
    await expect.poll(() => alive(first!)).toBe(false); // killed: its isolate was stopped mid-run
    expect((await run(compiled, host())).output).toBe("ok"); // and a fresh one serves the next rollout
  });

  it("see none of the runner's environment, and have an address-space limit", async () => {
    process.env.ROLLBOOK_TEST_SECRET = "do-not-leak";
    try {
      const compiled = await compile(`await ctx.chat([{ role: "user", content: "hi" }]);\nreturn "ok";`);
      let seen: { environ: string; limits: string } | undefined;
      const h = host(() => {
        const [pid] = sandboxPids();
        seen = { environ: readFileSync(`/proc/${pid}/environ`, "utf8"), limits: readFileSync(`/proc/${pid}/limits`, "utf8") };
      });
      const o = await run(compiled, h);
      expect(o.error).toMatchObject({ kind: "timeout" }); // the chat never answers
      const names = seen!.environ.split("\0").filter(Boolean).map((kv) => kv.split("=")[0]);
      // PATH, NODE_ENV and glibc's arena cap, plus what Node's IPC and the shell that applies the ulimit add.
      expect(names.sort()).toEqual(["MALLOC_ARENA_MAX", "NODE_CHANNEL_FD", "NODE_CHANNEL_SERIALIZATION_MODE", "NODE_ENV", "PATH", "PWD"]);
      expect(seen!.environ).not.toContain("do-not-leak");
      const bytes = addressSpaceMb(LIMITS.memory_mb) * 1024 * 1024;
      expect(seen!.limits).toMatch(new RegExp(`Max address space\\s+${bytes}\\s+${bytes}\\s+bytes`));
    } finally {
      delete process.env.ROLLBOOK_TEST_SECRET;
    }
  });

  it("reserve at most two malloc arenas, however many threads allocate", async () => {
    // Why the cap matters (arenas of 64 MiB against the address-space limit): the comment where pool.ts sets it.
    const compiled = await compile(`const a = []; for (let i = 0; i < 20000; i++) a.push({ i, s: "x".repeat(20) });\nawait ctx.chat([{ role: "user", content: "hi" }]);\nreturn a.length;`);
    const answering: RolloutHost = {
      ...host(),
      chat: async () => {
        await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
        return { content: "ok", finishReason: "stop", toolCalls: [], malformedToolCalls: [], message: { role: "assistant", content: "ok" }, usage: { promptTokens: 1, completionTokens: 1 } };
      },
    };
    const limits = LimitsConfig.parse({ rollout_timeout_ms: 30_000, cpu_timeout_ms: 5_000, memory_mb: 48 });
    const once = (i: number) =>
      runRollout({ compiled, task: {}, split: "train", step: 1, group: 0, rolloutIndex: i, limits, host: answering, mcpServers: [], getMessages: () => [] });
    for (let round = 0; round < 3; round++) {
      const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => once(i)));
      expect(outcomes.map((o) => o.error)).toEqual(outcomes.map(() => null));
    }
    const pids = sandboxPids();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) expect(mallocArenas(pid)).toBeLessThanOrEqual(2);
    // The other tests expect one sandbox process at a time: end these idle ones.
    sandboxPool.closeAll();
    await expect.poll(() => pids.some(alive)).toBe(false);
  });

  it("one that stops answering is killed by the runner's backstop at the wall clock plus a grace", async () => {
    const compiled = await compile(`await ctx.chat([{ role: "user", content: "hi" }]);\nreturn "ok";`);
    let frozen = 0;
    // Frozen mid-rollout (SIGSTOP): its own watchdog cannot fire, so only the runner can end it.
    const h = host(() => {
      frozen = sandboxPids()[0] ?? 0;
      process.kill(frozen, "SIGSTOP");
    });
    const t0 = performance.now();
    const o = await run(compiled, h);
    const took = performance.now() - t0;
    expect(o.error).toMatchObject({ kind: "timeout", message: expect.stringContaining("wall-clock timeout") });
    expect(took).toBeGreaterThan(LIMITS.rollout_timeout_ms + 4_000);
    expect(took).toBeLessThan(LIMITS.rollout_timeout_ms + 15_000);
    await expect.poll(() => alive(frozen)).toBe(false);
  });
});
