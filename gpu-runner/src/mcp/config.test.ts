/**
 * The "mcp" section of config.json (contracts/mcp.ts) and the runner's MCP settings (env.ts): defaults,
 * errors that name the field, secrets kept out of the config.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configSourcePath, formatZodIssues, McpConfig, McpServerDefinition, mcpDefinitionsUsed, parseRunConfig, resolveMcpConfig } from "../../../contracts";
import { loadEnv as loadRunnerEnv } from "../env";
import { configEgressProblems } from "../net/config-egress";
import { NO_EGRESS_EXCEPTIONS } from "../net/egress-policy";

// The runner has no default token: every environment here gives one.
const loadEnv = (vars: Record<string, string>) => loadRunnerEnv({ RUNNER_TOKEN: "config-test-token-0123456789abcdef", ...vars } as Record<string, string> as NodeJS.ProcessEnv);

const issues = (input: unknown) => {
  const r = McpConfig.safeParse(input);
  return r.success ? [] : formatZodIssues(r.error, "mcp.");
};

describe("McpConfig", () => {
  it("defaults: no servers, 10 s to connect and list, 30 s per call, 16 000 result characters", () => {
    expect(McpConfig.parse({})).toEqual({
      servers: {},
      connect_timeout_ms: 10_000,
      list_timeout_ms: 10_000,
      call_timeout_ms: 30_000,
      max_result_chars: 16_000,
    });
  });

  it("parses the three transports: a registered stdio server by name, http and sse with their headers", () => {
    const parsed = McpConfig.parse({
      servers: {
        everything: { transport: "stdio", server: "everything", tools: ["echo"] },
        web: { transport: "http", url: "http://127.0.0.1:3001/mcp" },
        legacy: { transport: "sse", url: "https://example.com/sse", headers: { Authorization: "Bearer ${TOKEN}" } },
      },
    });
    expect(parsed.servers.everything).toEqual({ transport: "stdio", server: "everything", tools: ["echo"] });
    expect(parsed.servers.web).toEqual({ transport: "http", url: "http://127.0.0.1:3001/mcp", headers: {} });
    expect(parsed.servers.legacy).toMatchObject({ headers: { Authorization: "Bearer ${TOKEN}" } });
  });

  it("refuses a command, args, env or cwd in an experiment, saying what to do instead", () => {
    const why = /^mcp\.servers\.s\.(command|args|env|cwd): experiments cannot start commands on the shared runner: a workspace admin registers the stdio server \(Team → MCP servers\)/;
    for (const field of [{ command: "sh" }, { args: ["-c", "id"] }, { env: { A: "b" } }, { cwd: "/" }]) {
      const found = issues({ servers: { s: { transport: "stdio", server: "x", ...field } } });
      expect(found).toHaveLength(1);
      expect(found[0]).toMatch(why);
    }
    // The finding as reported: `"command": "sh", "args": ["-c", "…"]` with no registered name at all.
    expect(issues({ servers: { s: { transport: "stdio", command: "sh", args: ["-c", "cat .data/runner-token"] } } })).toEqual(
      expect.arrayContaining([expect.stringMatching(why)]),
    );
  });

  it("names the field of every mistake", () => {
    expect(issues({ servers: { "my-server": { transport: "stdio", server: "x" } } })).toEqual(["mcp.servers.my-server: Invalid key in record"]);
    expect(issues({ servers: { s: { server: "x" } } })).toEqual([
      'mcp.servers.s.transport: transport must be "stdio" (with server: a registered MCP server), "http" (streamable HTTP, with url) or "sse" (with url)',
    ]);
    expect(issues({ servers: { s: { transport: "http", url: "ftp://x/y" } } })).toEqual(["mcp.servers.s.url: an http:// or https:// URL"]);
    expect(issues({ servers: { s: { transport: "stdio", server: "x", url: "http://a" } } })).toEqual(['mcp.servers.s: Unrecognized key: "url"']);
    expect(issues({ servers: { s: { transport: "http", url: "http://a/mcp", headers: { A: "${not closed" } } } })[0]).toMatch(/^mcp\.servers\.s\.headers\.A: write secrets as \$\{NAME\}/);
    expect(issues({ call_timeout_ms: 10 })[0]).toMatch(/^mcp\.call_timeout_ms: /);
    expect(issues({ servers: { s: { transport: "stdio", server: "x", tools: [] } } })[0]).toMatch(/^mcp\.servers\.s\.tools: /);
  });

  it("refuses a literal Authorization header: the secret would be stored with every run", () => {
    expect(issues({ servers: { s: { transport: "http", url: "http://a/mcp", headers: { authorization: "Bearer sk-123" } } } })).toEqual([
      'mcp.servers.s.headers: an Authorization header must take its secret from a workspace secret, e.g. "Bearer ${API_TOKEN}"',
    ]);
  });

  it("fills each stdio reference with the workspace's definition, and names a reference to none", () => {
    const config = McpConfig.parse({ servers: { e: { transport: "stdio", server: "everything", tools: ["echo"] }, web: { transport: "http", url: "http://a/mcp" } } });
    const definitions = { everything: McpServerDefinition.parse({ command: "mcp-server-everything", env: { K: "${KEY}" } }) };
    const resolved = resolveMcpConfig(config, definitions);
    expect(resolved).toMatchObject({ ok: true, config: { servers: { e: { transport: "stdio", definition: "everything", command: "mcp-server-everything", args: [], env: { K: "${KEY}" }, network: false, tools: ["echo"] } } } });
    expect(mcpDefinitionsUsed(config)).toEqual(["everything"]);
    expect(resolveMcpConfig(config, {})).toEqual({
      ok: false,
      problems: [{ path: ["mcp", "servers", "e", "server"], message: "no MCP server 'everything' is registered in this workspace (an admin adds it in Team → MCP servers)" }],
    });
    // Names are looked up as own keys only.
    expect(resolveMcpConfig(McpConfig.parse({ servers: { e: { transport: "stdio", server: "constructor" } } }), {}).ok).toBe(false);
  });

  it("connects the servers an editor's pasted mcpServers became, and checks their egress at the pasted key", async () => {
    const text = JSON.stringify({
      mcp: { servers: { everything: { transport: "stdio", server: "everything" } } },
      mcpServers: { web: { type: "streamable-http", url: "http://10.0.0.7/mcp", headers: { Authorization: "Bearer ${WEB_TOKEN}" } }, old: { type: "sse", url: "https://example.com/sse" } },
    });
    // What the runner's validation (experiment/validate.ts) hands to the run manager.
    const parsed = parseRunConfig(text, "train");
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
    const resolved = resolveMcpConfig(parsed.config.mcp, { everything: McpServerDefinition.parse({ command: "mcp-server-everything" }) });
    if (!resolved.ok) throw new Error(JSON.stringify(resolved.problems));
    expect(resolved.config.servers).toEqual({
      everything: { transport: "stdio", definition: "everything", command: "mcp-server-everything", args: [], env: {}, network: false },
      web: { transport: "http", url: "http://10.0.0.7/mcp", headers: { Authorization: "Bearer ${WEB_TOKEN}" } },
      old: { transport: "sse", url: "https://example.com/sse", headers: {} },
    });
    // A private address is refused at start like any mcp.servers url, and positioned at the pasted key.
    const egress = await configEgressProblems(parsed.config, NO_EGRESS_EXCEPTIONS, {
      lookup: async () => [{ address: "93.184.216.34", family: 4 }],
      sourcePath: (path) => configSourcePath(text, path),
    });
    expect(egress.map((p) => p.path)).toEqual([["mcp", "servers", "web", "url"]]);
    expect(configSourcePath(text, egress[0]!.path)).toEqual(["mcpServers", "web", "url"]);
    expect(egress[0]!.message).toMatch(/^mcpServers\.web\.url: 10\.0\.0\.7 is a private \(RFC 1918\) address/);
  });

  it("emits a JSON Schema with the field docs, for the editor's hovers", () => {
    const schema = JSON.stringify(z.toJSONSchema(McpConfig, { io: "input" }));
    expect(schema).toContain("registered MCP server (Team → MCP servers)");
    expect(schema).toContain("experiments cannot start commands on the shared runner");
    expect(schema).toContain("hung tool fails as a tool timeout");
  });
});

describe("runner MCP settings", () => {
  it("stdio on (sandboxed), no network and no extra paths by default", () => {
    const env = loadEnv({});
    expect(env.MCP_ALLOW_STDIO).toBe(true);
    expect(env.MCP_STDIO_NETWORK).toBe(false);
    expect(env.MCP_STDIO_READ_PATHS).toEqual([]);
  });

  it("MCP_ALLOW_STDIO=false turns stdio off; a typo is an error", () => {
    expect(loadEnv({ MCP_ALLOW_STDIO: "false" }).MCP_ALLOW_STDIO).toBe(false);
    expect(loadEnv({ MCP_ALLOW_STDIO: "off" }).MCP_ALLOW_STDIO).toBe(false);
    expect(() => loadEnv({ MCP_ALLOW_STDIO: "nope" })).toThrow(/MCP_ALLOW_STDIO/);
  });

  it("MCP_STDIO_READ_PATHS takes absolute folders, never one holding the repository or the runs", () => {
    expect(loadEnv({ MCP_STDIO_READ_PATHS: " /opt/mcp, /srv/tools ,," }).MCP_STDIO_READ_PATHS).toEqual(["/opt/mcp", "/srv/tools"]);
    expect(() => loadEnv({ MCP_STDIO_READ_PATHS: "relative/dir" })).toThrow(/not an absolute path/);
    expect(() => loadEnv({ MCP_STDIO_READ_PATHS: "/" })).toThrow(/holds the runs folder or this repository/);
    expect(() => loadEnv({ MCP_STDIO_READ_PATHS: "/srv/runs", ROLLBOOK_RUNS_DIR: "/srv/runs/a" })).toThrow(/holds the runs folder/);
  });
});
