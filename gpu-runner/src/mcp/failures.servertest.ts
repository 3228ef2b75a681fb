/**
 * McpHub when servers misbehave, on real processes: a command that does not exist, a server that never
 * answers initialize, one that writes garbage on stdout, one that crashes mid-call, one that ignores
 * stdin closing and SIGTERM and has a child, an HTTP URL where nothing listens; secrets that cannot be
 * resolved and a runner with stdio turned off. Each must fail with a reason naming the server, never
 * throw out of connect(), and leave no process behind.
 *   npx vitest run --project server gpu-runner/src/mcp/failures.servertest.ts
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpLaunchConfig, type McpServerStatus } from "../../../contracts";
import { loadEnv, REPO_ROOT } from "../env";
import { McpError, McpHub, type McpConnectOptions } from "./index";
import { descendants, FIXTURES, freePort, isAlive, LOOPBACK, readPids, waitUntil } from "./test-support";

let baseline: number[] = [];
let tmp = "";
const hubs: McpHub[] = [];

beforeAll(() => {
  baseline = descendants();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-mcp-"));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const pidFiles: string[] = [];
let pidFileCount = 0;
const pidFile = () => {
  const file = path.join(tmp, `pids-${++pidFileCount}`);
  pidFiles.push(file);
  return file;
};

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  // Every fixture process (orphaned grandchildren too, which /proc no longer shows as ours) must be gone;
  // kill what is not, so a failing test does not leak into the next.
  await waitUntil(() => pidFiles.flatMap(readPids).every((p) => !isAlive(p)), 1_000);
  const leftovers = pidFiles.splice(0).flatMap(readPids).filter(isAlive);
  for (const pid of leftovers) process.kill(pid, "SIGKILL");
  expect(leftovers).toEqual([]);
  expect(await waitUntil(() => descendants().every((p) => baseline.includes(p)))).toBe(true);
});
const fixture = (file: string, pids: string, extra: Record<string, unknown> = {}) => ({
  transport: "stdio",
  command: "node",
  args: [path.join(FIXTURES, file)],
  env: { PID_FILE: pids },
  ...extra,
});

async function connect(servers: Record<string, unknown>, extra: Record<string, unknown> = {}, options: Partial<McpConnectOptions> = {}) {
  const hub = new McpHub();
  hubs.push(hub);
  const changes: McpServerStatus[] = [];
  const started = Date.now();
  await hub.connect(McpLaunchConfig.parse({ servers, connect_timeout_ms: 20_000, ...extra }), {
    allowStdio: true,
    repoRoot: REPO_ROOT,
    // Unsandboxed: these tests follow the servers' own pids and files (sandbox.servertest.ts covers the sandbox).
    sandbox: null,
    egress: LOOPBACK, // the http/sse servers here listen on 127.0.0.1, refused unless allowed
    closeGraceMs: 300,
    onChange: (s) => changes.push(s),
    ...options,
  });
  return { hub, changes, elapsed: Date.now() - started };
}

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}

const only = (hub: McpHub) => hub.status()[0]!;

describe("McpHub failures", () => {
  it("a command that does not exist: failed to start, named; calls reject at once with the reason", async () => {
    const { hub, changes } = await connect({ files: { transport: "stdio", command: "no-such-mcp-server-zz", args: ["--x"] } });
    const status = only(hub);
    expect(status.state).toBe("failed");
    expect(status.error).toMatch(/^MCP server 'files' \(stdio: no-such-mcp-server-zz --x\) failed to start: spawn no-such-mcp-server-zz ENOENT \(not an executable in .*node_modules\/\.bin or on PATH\)$/);
    expect(changes).toEqual([status]);
    const started = Date.now();
    const err = await rejection(hub.call("files", "read", { path: "/" }));
    expect(Date.now() - started).toBeLessThan(100);
    expect(err).toMatchObject({ kind: "unavailable", server: "files", tool: "read" });
    expect(err.message).toBe(`${status.error}; cannot call tool 'read'`);
  });

  it("a server that never answers initialize: a timeout naming the server, and the process is killed", async () => {
    const pids = pidFile();
    const { hub, elapsed } = await connect({ mute: fixture("silent.mjs", pids) }, { connect_timeout_ms: 1_000 });
    expect(only(hub).error).toBe(`MCP server 'mute' (stdio: node ${path.join(FIXTURES, "silent.mjs")}) did not answer initialize within 1 s`);
    expect(elapsed).toBeLessThan(1_000 + 2 * 300 + 2_000);
    const [pid] = readPids(pids);
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid!)).toBe(false); // gone by the time connect() resolved
  });

  it("a server that writes garbage on stdout: a protocol failure naming it, well before the timeout", async () => {
    const pids = pidFile();
    const { hub, elapsed } = await connect({ noisy: fixture("garbage.mjs", pids) }, { connect_timeout_ms: 15_000 });
    expect(only(hub).error).toMatch(/^MCP server 'noisy' \(stdio: node .*garbage\.mjs\) sent invalid JSON-RPC: Unexpected token 'h', "hello, I a"\.\.\. is not valid JSON$/);
    expect(elapsed).toBeLessThan(8_000);
    expect(isAlive(readPids(pids)[0]!)).toBe(false);
  });

  it("a server that crashes mid-call: that call rejects, the server is marked failed, later calls say it is gone", async () => {
    const pids = pidFile();
    const { hub, changes } = await connect({ crashy: fixture("crashy.mjs", pids) });
    expect(only(hub).state).toBe("ready");
    expect(hub.tools("crashy").map((t) => t.function.name).sort()).toEqual(["crash", "echo", "garble"]);
    expect((await hub.call("crashy", "echo", { message: "hi" })).text).toBe("echo: hi");

    const died = await rejection(hub.call("crashy", "crash", {}));
    expect(died).toMatchObject({ kind: "unavailable", server: "crashy", tool: "crash" });
    expect(died.message).toMatch(/^MCP server 'crashy' \(stdio: node .*crashy\.mjs\) exited during the run — last stderr: .*exiting in the middle of a call, on purpose; the call to tool 'crash' did not finish$/);

    const later = await rejection(hub.call("crashy", "echo", { message: "still there?" }));
    expect(later.kind).toBe("unavailable");
    expect(later.message).toMatch(/exited during the run.*; cannot call tool 'echo'$/);
    expect(only(hub)).toMatchObject({ state: "failed", pid: null });
    expect(changes.map((c) => c.state)).toEqual(["ready", "failed"]);
    expect(isAlive(readPids(pids)[0]!)).toBe(false);
  });

  it("a server that breaks the protocol mid-run: the pending call rejects without waiting for its timeout, the server is failed", async () => {
    const pids = pidFile();
    const { hub } = await connect({ crashy: fixture("crashy.mjs", pids) }, { call_timeout_ms: 60_000 });
    const started = Date.now();
    const broken = await rejection(hub.call("crashy", "garble", {}));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(broken).toMatchObject({ kind: "unavailable", server: "crashy", tool: "garble" });
    expect(broken.message).toMatch(/^MCP server 'crashy' \(stdio: node .*\) sent invalid JSON-RPC: Unexpected token 'T'.*; the call to tool 'garble' did not finish$/);
    expect((await rejection(hub.call("crashy", "echo", { message: "x" }))).message).toMatch(/sent invalid JSON-RPC.*cannot call tool 'echo'$/);
    expect(isAlive(readPids(pids)[0]!)).toBe(false);
  });

  it("close() ends a server that ignores stdin closing and SIGTERM, and its child", async () => {
    const pids = pidFile();
    const { hub } = await connect({ stubborn: fixture("stubborn.mjs", pids) });
    expect(only(hub).state).toBe("ready");
    const [server, child] = readPids(pids);
    expect(isAlive(server!) && isAlive(child!)).toBe(true);
    const started = Date.now();
    await hub.close();
    expect(Date.now() - started).toBeLessThan(3 * 300 + 2_000);
    expect(isAlive(server!)).toBe(false);
    expect(isAlive(child!)).toBe(false);
  });

  it("a runner that exits without closing its hub still takes its stdio servers and their children along", async () => {
    const pids = pidFile();
    const runner = spawn(process.execPath, ["--import", "tsx", path.join(FIXTURES, "exits-without-close.ts"), pids], { cwd: REPO_ROOT, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    runner.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => runner.once("exit", resolve));
    expect(code, stderr).toBe(0);
    const [server, child] = readPids(pids);
    expect(server).toBeGreaterThan(0);
    expect(child).toBeGreaterThan(0);
    expect(await waitUntil(() => !isAlive(server!) && !isAlive(child!), 2_000)).toBe(true);
  });

  it("an HTTP or SSE URL where nothing listens: failed to connect, named, quickly", async () => {
    const port = await freePort();
    const { hub, elapsed } = await connect({
      web: { transport: "http", url: `http://127.0.0.1:${port}/mcp` },
      old: { transport: "sse", url: `http://127.0.0.1:${port}/sse` },
    });
    const [web, old] = hub.status();
    expect(web!.error).toMatch(new RegExp(`^MCP server 'web' \\(http: http://127\\.0\\.0\\.1:${port}/mcp\\) failed to connect: .*ECONNREFUSED`));
    expect(old!.error).toMatch(new RegExp(`^MCP server 'old' \\(sse: http://127\\.0\\.0\\.1:${port}/sse\\) failed to connect: .*ECONNREFUSED`));
    expect(elapsed).toBeLessThan(5_000);
  });

  it("an HTTP server that accepts and never answers: initialize times out; headers carry resolved secrets", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const silent = http.createServer((req) => seen.push(req.headers)); // never responds
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as { port: number };
    try {
      const { hub } = await connect(
        { slow: { transport: "http", url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: "Bearer ${MCP_TEST_TOKEN}" } } },
        { connect_timeout_ms: 500 },
        { secrets: { values: { MCP_TEST_TOKEN: "t0ken" } } },
      );
      expect(only(hub).error).toBe(`MCP server 'slow' (http: http://127.0.0.1:${port}/mcp) did not answer initialize within 0.5 s`);
      expect(seen[0]?.authorization).toBe("Bearer t0ken");
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("${NAME} that is no workspace secret (a runner variable included): the server fails naming server, field and name; nothing is spawned", async () => {
    const pids = pidFile();
    const { hub } = await connect(
      {
        unshared: fixture("crashy.mjs", pids, { env: { PID_FILE: pids, TOKEN: "${RUNNER_TOKEN}" } }),
        unset: { transport: "http", url: "http://127.0.0.1:9/mcp", headers: { "X-Key": "${MCP_TEST_UNSET}" } },
      },
      {},
      { secrets: { values: {} } },
    );
    const [unshared, unset] = hub.status();
    expect(unshared!.error).toMatch(
      /^MCP server 'unshared' \(stdio: node .*\) was not started: env\.TOKEN uses \$\{RUNNER_TOKEN\}, which is not a secret of this workspace \(an admin adds it in Team → Secrets\)$/,
    );
    expect(unset!.error).toBe(
      "MCP server 'unset' (http: http://127.0.0.1:9/mcp) was not connected: headers.X-Key uses ${MCP_TEST_UNSET}, which is not a secret of this workspace (an admin adds it in Team → Secrets)",
    );
    expect(readPids(pids)).toEqual([]);
  });

  it("MCP_ALLOW_STDIO=false: stdio servers fail with the reason and are not spawned; HTTP ones are unaffected", async () => {
    const vars: Record<string, string> = { RUNNER_TOKEN: "failures-test-token-0123456789ab", MCP_ALLOW_STDIO: "false" };
    const env = loadEnv(vars as NodeJS.ProcessEnv);
    expect(env.MCP_ALLOW_STDIO).toBe(false);
    const pids = pidFile();
    const port = await freePort();
    const { hub } = await connect(
      { local: fixture("crashy.mjs", pids), remote: { transport: "http", url: `http://127.0.0.1:${port}/mcp` } },
      {},
      { allowStdio: env.MCP_ALLOW_STDIO },
    );
    const [local, remote] = hub.status();
    expect(local!.error).toBe(
      `MCP server 'local' (stdio: node ${path.join(FIXTURES, "crashy.mjs")}) was not started: this runner does not run stdio MCP servers (MCP_ALLOW_STDIO=false); use an "http" or "sse" server`,
    );
    expect(remote!.error).toMatch(/failed to connect: .*ECONNREFUSED/); // tried, not refused by the setting
    expect(readPids(pids)).toEqual([]);
  });

  it("a run stopped while servers connect: connect resolves promptly and the process is killed", async () => {
    const pids = pidFile();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const { hub, elapsed } = await connect({ mute: fixture("silent.mjs", pids) }, { connect_timeout_ms: 30_000 }, { signal: controller.signal });
    expect(only(hub).error).toMatch(/^MCP server 'mute' .* was not connected: the run was stopped while it connected$/);
    expect(elapsed).toBeLessThan(5_000);
    expect(isAlive(readPids(pids)[0]!)).toBe(false);
  });

  it("close() while a server is still connecting ends it too", async () => {
    const pids = pidFile();
    const hub = new McpHub();
    hubs.push(hub);
    const connecting = hub.connect(McpLaunchConfig.parse({ servers: { mute: fixture("silent.mjs", pids) }, connect_timeout_ms: 30_000 }), {
      allowStdio: true,
      repoRoot: REPO_ROOT,
      sandbox: null,
      closeGraceMs: 300,
    });
    expect(await waitUntil(() => readPids(pids).length === 1)).toBe(true);
    await hub.close();
    await connecting;
    expect(only(hub).state).toBe("closed");
    expect(isAlive(readPids(pids)[0]!)).toBe(false);
  });
});
