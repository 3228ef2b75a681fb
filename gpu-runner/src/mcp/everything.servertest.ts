/**
 * McpHub end to end against the real @modelcontextprotocol/server-everything from npm, over stdio,
 * streamable HTTP and HTTP+SSE: tools listed as OpenAI function specs, echo and get-sum called, a tool
 * error returned as isError, a call timing out, secrets resolved, and no process left behind.
 *   npx vitest run --project server gpu-runner/src/mcp/everything.servertest.ts
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { McpLaunchConfig, type McpServerStatus } from "../../../contracts";
import { REPO_ROOT } from "../env";
import { McpError, McpHub } from "./index";
import { descendants, isAlive, LOOPBACK, startEverythingHttp, type EverythingHttp, waitUntil } from "./test-support";

let baseline: number[] = [];
const hubs: McpHub[] = [];
const servers: EverythingHttp[] = [];

beforeAll(() => {
  baseline = descendants();
});

afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  // Nothing a test started may outlive it: not the servers, not their children.
  expect(await waitUntil(() => descendants().every((p) => baseline.includes(p)))).toBe(true);
});

async function connect(servers: Record<string, unknown>, extra: Record<string, unknown> = {}, secrets?: Record<string, string>) {
  const hub = new McpHub();
  hubs.push(hub);
  const changes: McpServerStatus[] = [];
  await hub.connect(McpLaunchConfig.parse({ servers, connect_timeout_ms: 30_000, ...extra }), {
    allowStdio: true,
    repoRoot: REPO_ROOT,
    // What the runner does: stdio servers in the bubblewrap sandbox (sandbox.ts).
    sandbox: { allowNetwork: false, readPaths: [], repoRoot: REPO_ROOT },
    egress: LOOPBACK, // the http/sse servers here listen on 127.0.0.1, refused unless allowed
    secrets: secrets ? { values: secrets } : undefined,
    onChange: (s) => changes.push(s),
  });
  return { hub, changes };
}

async function rejection(promise: Promise<unknown>): Promise<McpError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpError);
  return err as McpError;
}

/** What every transport must do with server-everything. */
async function exercise(hub: McpHub, name: string) {
  const [status] = hub.status();
  expect(status, JSON.stringify(status)).toMatchObject({ name, state: "ready", error: null });

  const tools = hub.tools(name);
  const byName = new Map(tools.map((t) => [t.function.name, t]));
  expect(byName.get("echo")).toMatchObject({
    type: "function",
    function: { name: "echo", description: "Echoes back the input string", parameters: { type: "object", required: ["message"] } },
  });
  expect(byName.get("get-sum")?.function.parameters).toMatchObject({ properties: { a: { type: "number" }, b: { type: "number" } } });
  expect(byName.get("get-sum")?.function.parameters).not.toHaveProperty("$schema");

  expect(await hub.call(name, "echo", { message: "hello over MCP" })).toEqual({ text: "Echo: hello over MCP", isError: false });
  expect(await hub.call(name, "get-sum", { a: 2, b: 40 })).toEqual({ text: "The sum of 2 and 40 is 42.", isError: false });

  // Bad arguments: refused by the tool's input schema before the call, as a tool error the model should see.
  const bad = await hub.call(name, "get-sum", { a: 2, b: "forty" });
  expect(bad).toEqual({ isError: true, text: "Tool 'get-sum' was not called: its arguments do not match its input schema: argument 'b' must be number" });

  const structured = await hub.call(name, "get-structured-content", { location: "New York" });
  expect(structured.structured).toMatchObject({ conditions: expect.any(String) });

  // Binary content is summarised for the model, never pasted as base64.
  const image = await hub.call(name, "get-tiny-image", {});
  expect(image.text).toMatch(/\[image: image\/png, [\d.]+ KB\]/);
  expect(image.text.length).toBeLessThan(1_000);

  // A call over its time limit rejects as a timeout naming server and tool; the server stays usable.
  const slow = await rejection(hub.call(name, "trigger-long-running-operation", { duration: 5, steps: 5 }, { timeoutMs: 300 }));
  expect(slow).toMatchObject({ kind: "timeout", server: name, tool: "trigger-long-running-operation" });
  expect(slow.message).toBe(`MCP server '${name}': tool 'trigger-long-running-operation' did not answer within 0.3 s`);
  expect((await hub.call(name, "echo", { message: "still here" })).text).toBe("Echo: still here");

  const unknown = await rejection(hub.call(name, "no-such-tool", {}));
  expect(unknown).toMatchObject({ kind: "tool" });
  expect(unknown.message).toMatch(/offers no tool 'no-such-tool'.*echo/);
}

describe("McpHub with server-everything", () => {
  it("stdio: resolves the command from node_modules/.bin, calls tools, and ends the process on close", async () => {
    const { hub, changes } = await connect({ everything: { transport: "stdio", command: "mcp-server-everything" } });
    await exercise(hub, "everything");
    const pid = hub.status()[0]!.pid!;
    expect(isAlive(pid)).toBe(true);
    expect(hub.status()[0]!.stderr.join("\n")).toMatch(/Starting default \(STDIO\) server/);
    expect(changes.map((c) => c.state)).toEqual(["ready"]);

    await hub.close();
    expect(isAlive(pid)).toBe(false);
    expect(hub.status()[0]!.state).toBe("closed");
    const after = await rejection(hub.call("everything", "echo", { message: "x" }));
    expect(after).toMatchObject({ kind: "unavailable" });
    expect(after.message).toMatch(/MCP server 'everything' \(stdio: mcp-server-everything\) is closed/);
  });

  it("stdio: the server's environment holds only what its definition names (secrets from the workspace's), plus PATH and HOME", async () => {
    const canary = "ROLLBOOK_MCP_TEST_CANARY";
    process.env[canary] = "must-not-leak";
    try {
      const { hub } = await connect(
        { everything: { transport: "stdio", command: "mcp-server-everything", env: { API_TOKEN: "${MCP_TEST_SECRET}", MODE: "x-${MCP_TEST_SECRET}-y" } } },
        {},
        { MCP_TEST_SECRET: "s3cret" },
      );
      const env = JSON.parse((await hub.call("everything", "get-env", {})).text) as Record<string, string>;
      expect(env.API_TOKEN).toBe("s3cret");
      expect(env.MODE).toBe("x-s3cret-y");
      expect(env.PATH).toBeTruthy();
      expect(env).not.toHaveProperty(canary);
      expect(env).not.toHaveProperty("RUNNER_TOKEN");
      // Nothing beyond the definition's variables and the sandbox's PATH, HOME and working directory (PWD=/tmp).
      expect(Object.keys(env).sort()).toEqual(["API_TOKEN", "HOME", "MODE", "PATH", "PWD"]);
    } finally {
      delete process.env[canary];
    }
  });

  it("stdio: the tools allow-list limits what is offered and callable; a missing tool fails the server", async () => {
    const { hub } = await connect({
      few: { transport: "stdio", command: "mcp-server-everything", tools: ["echo", "get-sum"] },
      typo: { transport: "stdio", command: "mcp-server-everything", tools: ["echo", "get_sum"] },
    });
    expect(hub.tools("few").map((t) => t.function.name)).toEqual(["echo", "get-sum"]);
    const refused = await rejection(hub.call("few", "get-env", {}));
    expect(refused).toMatchObject({ kind: "tool", server: "few", tool: "get-env" });
    const typo = hub.status().find((s) => s.name === "typo")!;
    expect(typo.state).toBe("failed");
    expect(typo.error).toMatch(/^MCP server 'typo' \(stdio: mcp-server-everything\) has no tool 'get_sum' \(config "tools"\); it offers: echo, .*get-sum/);
    expect(hub.tools("typo")).toEqual([]);
  });

  it("streamable HTTP: lists and calls tools, and a server that goes away fails the calls after it", async () => {
    const server = await startEverythingHttp("streamableHttp");
    servers.push(server);
    const { hub, changes } = await connect(
      { web: { transport: "http", url: server.url, headers: { "X-Api-Key": "${MCP_TEST_SECRET}" } } },
      {},
      { MCP_TEST_SECRET: "k" },
    );
    await exercise(hub, "web");
    expect(hub.status()[0]!.pid).toBeNull();

    await server.stop();
    const gone = await rejection(hub.call("web", "echo", { message: "anyone?" }));
    expect(gone).toMatchObject({ kind: "unavailable", server: "web", tool: "echo" });
    expect(gone.message).toMatch(/^MCP server 'web' \(http: http:\/\/127\.0\.0\.1:\d+\/mcp\) stopped answering: fetch failed.*ECONNREFUSED/);
    const later = await rejection(hub.call("web", "get-sum", { a: 1, b: 2 }));
    expect(later.message).toMatch(/stopped answering.*cannot call tool 'get-sum'/);
    expect(changes.map((c) => c.state)).toEqual(["ready", "failed"]);
  });

  it("HTTP+SSE: lists and calls tools", async () => {
    const server = await startEverythingHttp("sse");
    servers.push(server);
    const { hub } = await connect({ legacy: { transport: "sse", url: server.url } });
    await exercise(hub, "legacy");
  });

  it("all three at once, each independent: one hub, three transports", async () => {
    const http = await startEverythingHttp("streamableHttp");
    const sse = await startEverythingHttp("sse");
    servers.push(http, sse);
    const { hub } = await connect({
      a: { transport: "stdio", command: "mcp-server-everything", tools: ["echo"] },
      b: { transport: "http", url: http.url, tools: ["echo"] },
      c: { transport: "sse", url: sse.url, tools: ["echo"] },
    });
    const replies = await Promise.all(["a", "b", "c"].map((s) => hub.call(s, "echo", { message: s })));
    expect(replies.map((r) => r.text)).toEqual(["Echo: a", "Echo: b", "Echo: c"]);
  });
});
