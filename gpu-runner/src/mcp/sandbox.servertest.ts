/**
 * The stdio MCP sandbox (sandbox.ts) on real bubblewrap, against a hostile server (fixtures/prober.mjs) whose
 * tools try to reach what a shared runner must keep: its data dir and token files, other runs' folders, its
 * environment, its processes, its network, its writable files. Each attempt must fail; the controls (a file
 * the sandbox may read, the network when allowed) must succeed, so a broken probe cannot pass for a sandbox.
 *   npx vitest run --project server gpu-runner/src/mcp/sandbox.servertest.ts
 */
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpLaunchConfig } from "../../../contracts";
import { REPO_ROOT } from "../env";
import { McpHub } from "./index";
import { findBwrap, SANDBOX_UID, type StdioSandboxSettings } from "./sandbox";
import { descendants, FIXTURES, waitUntil } from "./test-support";

const canary = `canary-${randomUUID()}`;
const dataDir = path.join(REPO_ROOT, ".data");
const canaryFile = path.join(dataDir, `sandbox-canary-${process.pid}`);
let runsDir = "";
let listener: net.Server;
let port = 0;
let baseline: number[] = [];
const hubs: McpHub[] = [];

beforeAll(async () => {
  expect(findBwrap(), "bubblewrap must be installed for stdio MCP servers (scripts/lib.sh installs it)").not.toBeNull();
  baseline = descendants();
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(canaryFile, canary, { mode: 0o644 }); // readable by anyone on the host: only the sandbox stops it
  runsDir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-sandbox-runs-"));
  fs.mkdirSync(path.join(runsDir, "other-run"));
  fs.writeFileSync(path.join(runsDir, "other-run", "events.jsonl"), canary, { mode: 0o644 });
  process.env.ROLLBOOK_SANDBOX_CANARY = canary;
  // A client (the sandboxed server probing the network) may reset the connection: that is no error of this test.
  listener = net.createServer((s) => s.on("error", () => {}).end("hello"));
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as net.AddressInfo).port;
});

afterAll(async () => {
  fs.rmSync(canaryFile, { force: true });
  fs.rmSync(runsDir, { recursive: true, force: true });
  delete process.env.ROLLBOOK_SANDBOX_CANARY;
  await new Promise((resolve) => listener.close(resolve));
});

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  expect(await waitUntil(() => descendants().every((p) => baseline.includes(p)))).toBe(true);
});

const settings = (over: Partial<StdioSandboxSettings> = {}): StdioSandboxSettings => ({ allowNetwork: false, readPaths: [FIXTURES], repoRoot: REPO_ROOT, ...over });

async function prober(opts: { network?: boolean; sandbox?: StdioSandboxSettings } = {}) {
  const hub = new McpHub();
  hubs.push(hub);
  await hub.connect(
    McpLaunchConfig.parse({
      servers: { p: { transport: "stdio", definition: "prober", command: "node", args: [path.join(FIXTURES, "prober.mjs")], env: { GIVEN: "yes" }, network: opts.network ?? false } },
      connect_timeout_ms: 30_000,
    }),
    { allowStdio: true, repoRoot: REPO_ROOT, sandbox: opts.sandbox ?? settings(), closeGraceMs: 300 },
  );
  const call = async (tool: string, args: Record<string, unknown> = {}) => (await hub.call("p", tool, args)).text;
  return { hub, call };
}

describe("stdio MCP servers run in the bubblewrap sandbox", () => {
  it("cannot read the runner's data dir, tokens, runs or process environment; sees only its definition's env", async () => {
    const { hub, call } = await prober();
    expect(hub.status()[0], JSON.stringify(hub.status()[0])).toMatchObject({ state: "ready" });

    // Control: a file the sandbox may read (its own script) is read, so the probe itself works.
    expect(await call("read", { path: path.join(FIXTURES, "prober.mjs") })).toMatch(/^ok: /);

    expect(await call("read", { path: canaryFile })).toMatch(/^error: ENOENT/);
    for (const token of ["runner-token", "engine-token", "auth-secret"]) {
      expect(await call("read", { path: path.join(dataDir, token) })).toMatch(/^error: ENOENT/);
    }
    expect(await call("list", { path: dataDir })).toMatch(/^error: ENOENT/);
    expect(await call("read", { path: path.join(runsDir, "other-run", "events.jsonl") })).toMatch(/^error: ENOENT/);
    expect(await call("list", { path: os.tmpdir() })).not.toContain("rollbook-sandbox-runs-");
    expect(await call("read", { path: path.join(REPO_ROOT, ".env") })).toMatch(/^error: ENOENT/);
    // The repository itself is not there, only the folders bound into the sandbox.
    expect((await call("list", { path: REPO_ROOT })).split(/[:,]/).map((s) => s.trim())).not.toContain("scripts");
    // The runner's process (and its environment) is in another pid namespace.
    expect(await call("read", { path: `/proc/${process.pid}/environ` })).toMatch(/^error: ENOENT/);
    expect(await call("shell", { script: "cat /proc/1/environ | tr '\\0' '\\n'" })).not.toContain(canary);

    const env = JSON.parse(await call("env")) as Record<string, string>;
    expect(Object.keys(env).sort()).toEqual(["GIVEN", "HOME", "PATH", "PWD"]);
    expect(JSON.stringify(env)).not.toContain(canary);

    const who = JSON.parse(await call("whoami")) as { uid: number; gid: number; hostname: string };
    expect(who).toMatchObject({ uid: SANDBOX_UID, gid: SANDBOX_UID, hostname: "mcp-sandbox" });
    expect(await call("shell", { script: "id -u; cat /etc/shadow" })).toMatch(/^error: /);
  });

  it("bwrap itself (pid 1 inside) and the server start with none of the runner's environment, the SDK's defaults included", async () => {
    // The MCP SDK's StdioClientTransport spawns with getDefaultEnvironment() (HOME, LOGNAME, PATH, SHELL, TERM,
    // USER) merged over the env it is given, so these are the variables that could reach bwrap's own process.
    const marked: Record<string, string> = {
      HOME: `/home/${canary}`,
      SHELL: `/bin/sh-${canary}`,
      TERM: `term-${canary}`,
      USER: `user-${canary}`,
      LOGNAME: `log-${canary}`,
      PATH: `${process.env.PATH ?? "/usr/bin:/bin"}:/nowhere-${canary}`,
      ROLLBOOK_SANDBOX_MARKER: canary,
    };
    const saved = Object.fromEntries(Object.keys(marked).map((k) => [k, process.env[k]]));
    Object.assign(process.env, marked);
    try {
      const { hub, call } = await prober();
      expect(hub.status()[0], JSON.stringify(hub.status()[0])).toMatchObject({ state: "ready" });
      const environ = async (file: string) => {
        const read = await call("read", { path: file });
        expect(read, file).toMatch(/^ok: /);
        return read.slice("ok: ".length).split("\0").filter((kv) => kv !== "");
      };
      const bwrapOwn = await environ("/proc/1/environ");
      const server = await environ("/proc/self/environ");
      expect(bwrapOwn.filter((kv) => kv.includes(canary)), "bwrap's own environment").toEqual([]);
      expect(server.filter((kv) => kv.includes(canary)), "the server's environment").toEqual([]);
      // bwrap is given nothing at all; the server exactly PATH, HOME and its definition's GIVEN (and the PWD bwrap sets).
      expect(bwrapOwn).toEqual([]);
      expect(server.map((kv) => kv.split("=")[0]).sort()).toEqual(["GIVEN", "HOME", "PATH", "PWD"]);
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it("cannot write outside its own /tmp, and keeps no network unless its definition asks and the operator allows", async () => {
    const { call } = await prober();
    expect(await call("write", { path: "/tmp/scratch" })).toBe("ok: written");
    expect(await call("write", { path: path.join(REPO_ROOT, "node_modules", "planted.js") })).toMatch(/^error: (EROFS|EACCES)/);
    expect(await call("write", { path: path.join(FIXTURES, "planted.js") })).toMatch(/^error: (EROFS|EACCES)/);
    expect(fs.existsSync(path.join(FIXTURES, "planted.js"))).toBe(false);
    expect(await call("connect", { host: "127.0.0.1", port })).toMatch(/^error: /);

    // Control: with the network given, the same probe connects (so "error" above was the sandbox's doing).
    const open = await prober({ network: true, sandbox: settings({ allowNetwork: true }) });
    expect(await open.call("connect", { host: "127.0.0.1", port })).toBe("ok: connected");
  });

  it("refuses what the operator does not allow: the network, a command outside what the sandbox can read", async () => {
    const hub = new McpHub();
    hubs.push(hub);
    await hub.connect(
      McpLaunchConfig.parse({
        servers: {
          wants_net: { transport: "stdio", command: "node", args: [path.join(FIXTURES, "prober.mjs")], network: true },
          outside: { transport: "stdio", command: path.join(REPO_ROOT, "scripts/start.sh") },
        },
      }),
      { allowStdio: true, repoRoot: REPO_ROOT, sandbox: settings() },
    );
    const [wantsNet, outside] = hub.status();
    expect(wantsNet!.error).toMatch(/failed to start: its definition asks for the network, which this runner does not give stdio MCP servers \(MCP_STDIO_NETWORK=false\)$/);
    expect(outside!.error).toMatch(/failed to start: .*scripts\/start\.sh lies outside what the sandbox can read/);
  });
});
