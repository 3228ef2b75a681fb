/**
 * The supervisor against a stand-in engine (a tiny Node HTTP server spawned exactly as the Python engine
 * is): readiness, restart with backoff after the child dies, and stop() ending only its own child.
 */
import fs from "node:fs";
import { freePort } from "../test-support/net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunnerNotice } from "../../../contracts";
import { backendNotice } from "./backend-notice";
import { describeExit, EngineSupervisor } from "./supervisor";

const FAKE = `
import http from "node:http";
const port = Number(process.argv[2]);
http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ status: "ok", backend: "fake", device: "cpu", model: "m", max_context_tokens: 512,
    memory: { rss_bytes: 1, gpu_allocated_bytes: null } }));
}).listen(port, "127.0.0.1", () => console.log("ENGINE READY " + port));
`;


function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

let sup: EngineSupervisor | null = null;
afterEach(async () => {
  await sup?.stop(2_000);
  sup = null;
});

describe("EngineSupervisor", () => {
  it("spawns the engine, becomes ready, restarts it after it dies, and stops only its own child", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-sup-"));
    const script = path.join(dir, "fake-engine.mjs");
    fs.writeFileSync(script, FAKE);
    const port = await freePort();
    const logs: string[] = [];
    sup = new EngineSupervisor({
      url: `http://127.0.0.1:${port}`,
      spawn: { python: process.execPath, args: [script, String(port)], cwd: dir },
      healthIntervalMs: 200,
      onLog: (l) => logs.push(l),
    });
    sup.start();
    await sup.waitReady(15_000);
    const first = sup.status();
    expect(first).toMatchObject({ state: "ready", restarts: 0 });
    expect(first.health?.backend).toBe("fake");
    expect(logs.some((l) => l.includes("ENGINE READY"))).toBe(true);

    // The engine dies: the supervisor notices, restarts it (1 s backoff) and is ready again.
    process.kill(first.pid!, "SIGKILL");
    await until(() => sup!.status().state !== "ready");
    expect(["restarting", "starting"]).toContain(sup.status().state);
    await until(() => sup!.status().state === "ready" && sup!.status().pid !== first.pid);
    const second = sup.status();
    expect(second.restarts).toBe(1);
    expect(alive(second.pid!)).toBe(true);

    await sup.stop(2_000);
    expect(alive(second.pid!)).toBe(false);
    sup = null;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("records why it restarted the engine: a SIGKILL it did not send reads as out of memory, with the last stderr", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-sup-"));
    const script = path.join(dir, "dying-engine.mjs");
    // The first engine allocates (says so on stderr) and is SIGKILLed as the OOM killer would; later ones live.
    fs.writeFileSync(
      script,
      FAKE +
        `
import fs from "node:fs";
const marker = ${JSON.stringify(path.join(dir, "died"))};
if (!fs.existsSync(marker)) {
  fs.writeFileSync(marker, "");
  setTimeout(() => { console.error("tokenising a 10 MB prompt"); setTimeout(() => process.kill(process.pid, "SIGKILL"), 50); }, 300);
}
`,
    );
    const port = await freePort();
    const restarts: { at: number; reason: string; cause: string }[] = [];
    sup = new EngineSupervisor({
      url: `http://127.0.0.1:${port}`,
      spawn: { python: process.execPath, args: [script, String(port)], cwd: dir },
      healthIntervalMs: 100,
      onLog: () => {},
      onRestart: (r) => restarts.push(r),
    });
    expect(sup.status().lastRestart).toBeNull();
    const before = Date.now();
    sup.start();
    await until(() => restarts.length === 1);
    const [restart] = restarts;
    expect(restart!.reason).toMatch(/^engine killed by SIGKILL, likely out of memory/);
    expect(restart!.reason).toContain("last output: tokenising a 10 MB prompt");
    // What runs read (restartCause) says the kind of exit only: no memory figure, no output of the engine.
    expect(restart!.cause).toBe("engine killed by SIGKILL, likely out of memory");
    expect(restart!.at).toBeGreaterThanOrEqual(before);
    expect(restart!.at).toBeLessThanOrEqual(Date.now());
    expect(sup.status().lastRestart).toEqual(restart);
    await until(() => sup!.status().state === "ready");
    expect(sup.status()).toMatchObject({ restarts: 1, lastRestart: restart });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("tells a GPU sampling with transformers once per engine process, not at every health check", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-sup-"));
    const script = path.join(dir, "gpu-engine.mjs");
    // A CUDA engine without vLLM; it prints a line per health check, so the test can count the polls.
    fs.writeFileSync(script, FAKE.replace('backend: "fake", device: "cpu"', 'backend: "transformers", device: "cuda:0"').replace("http.createServer((req, res) => {", 'http.createServer((req, res) => {\n  console.log("HEALTH");'));
    const port = await freePort();
    const logs: string[] = [];
    const notices: RunnerNotice[] = [];
    sup = new EngineSupervisor({
      url: `http://127.0.0.1:${port}`,
      spawn: { python: process.execPath, args: [script, String(port)], cwd: dir },
      healthIntervalMs: 50,
      onLog: (l) => logs.push(l),
      onNotice: (n) => notices.push(n),
    });
    const polls = () => logs.filter((l) => l === "HEALTH").length;
    sup.start();
    await sup.waitReady(15_000);
    await until(() => polls() >= 10);
    expect(notices).toEqual([backendNotice({ backend: "transformers", device: "cuda:0" })]);
    expect(notices[0]!.kind).toBe("slow_sampling");

    // A new engine process with the same setup says it once more, and again only once.
    const first = sup.status().pid!;
    process.kill(first, "SIGKILL");
    await until(() => sup!.status().state === "ready" && sup!.status().pid !== first);
    const after = polls();
    await until(() => polls() >= after + 10);
    expect(notices).toHaveLength(2);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("tells nothing about an engine on a CPU", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-sup-"));
    const script = path.join(dir, "cpu-engine.mjs");
    fs.writeFileSync(script, FAKE.replace('backend: "fake"', 'backend: "transformers"').replace("http.createServer((req, res) => {", 'http.createServer((req, res) => {\n  console.log("HEALTH");'));
    const port = await freePort();
    const logs: string[] = [];
    const notices: RunnerNotice[] = [];
    sup = new EngineSupervisor({
      url: `http://127.0.0.1:${port}`,
      spawn: { python: process.execPath, args: [script, String(port)], cwd: dir },
      healthIntervalMs: 50,
      onLog: (l) => logs.push(l),
      onNotice: (n) => notices.push(n),
    });
    sup.start();
    await sup.waitReady(15_000);
    await until(() => logs.filter((l) => l === "HEALTH").length >= 5);
    expect(notices).toEqual([]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("describes exits by code or signal, quoting only the last stderr lines", () => {
    const lines = ["one", "two", "three", "four", "five", "six"];
    expect(describeExit(3, null, lines)).toBe("exited with code 3; last output: two | three | four | five | six");
    expect(describeExit(null, "SIGSEGV", [])).toBe("killed by SIGSEGV");
    expect(describeExit(null, "SIGKILL", [])).toMatch(/likely out of memory/);
  });

  it("goes to failed (not a restart loop) when the engine cannot start at all", async () => {
    sup = new EngineSupervisor({
      url: `http://127.0.0.1:${await freePort()}`,
      spawn: { python: "/nonexistent/python", args: [], cwd: os.tmpdir() },
      healthIntervalMs: 100,
      maxConsecutiveRestarts: 1,
      maxBackoffMs: 50,
      onLog: () => {},
    });
    sup.start();
    await expect(sup.waitReady(10_000)).rejects.toThrow(/engine failed/);
    expect(sup.status().state).toBe("failed");
  });
});
