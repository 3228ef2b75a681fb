/**
 * The "mcp" section of config.json (contracts/mcp.ts) and the runner's MCP settings (env.ts): defaults,
 * errors that name the field, secrets kept out of the config.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { formatZodIssues, McpConfig } from "../../contracts";
import { loadEnv as loadRunnerEnv, mcpSecrets } from "../env";

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

  it("parses the three transports, filling args, env and headers", () => {
    const parsed = McpConfig.parse({
      servers: {
        everything: { transport: "stdio", command: "mcp-server-everything" },
        web: { transport: "http", url: "http://127.0.0.1:3001/mcp" },
        legacy: { transport: "sse", url: "https://example.com/sse", headers: { Authorization: "Bearer ${TOKEN}" } },
      },
    });
    expect(parsed.servers.everything).toEqual({ transport: "stdio", command: "mcp-server-everything", args: [], env: {} });
    expect(parsed.servers.web).toEqual({ transport: "http", url: "http://127.0.0.1:3001/mcp", headers: {} });
    expect(parsed.servers.legacy).toMatchObject({ headers: { Authorization: "Bearer ${TOKEN}" } });
  });

  it("names the field of every mistake", () => {
    expect(issues({ servers: { "my-server": { transport: "stdio", command: "x" } } })).toEqual(["mcp.servers.my-server: Invalid key in record"]);
    expect(issues({ servers: { s: { command: "x" } } })).toEqual([
      'mcp.servers.s.transport: transport must be "stdio" (with command), "http" (streamable HTTP, with url) or "sse" (with url)',
    ]);
    expect(issues({ servers: { s: { transport: "http", url: "ftp://x/y" } } })).toEqual(["mcp.servers.s.url: an http:// or https:// URL"]);
    expect(issues({ servers: { s: { transport: "stdio", command: "x", url: "http://a" } } })).toEqual(['mcp.servers.s: Unrecognized key: "url"']);
    expect(issues({ servers: { s: { transport: "stdio", command: "x", env: { A: "${not closed" } } } })[0]).toMatch(/^mcp\.servers\.s\.env\.A: write secrets as \$\{NAME\}/);
    expect(issues({ call_timeout_ms: 10 })[0]).toMatch(/^mcp\.call_timeout_ms: /);
    expect(issues({ servers: { s: { transport: "stdio", command: "x", tools: [] } } })[0]).toMatch(/^mcp\.servers\.s\.tools: /);
  });

  it("refuses a literal Authorization header: the secret would be stored with every run", () => {
    expect(issues({ servers: { s: { transport: "http", url: "http://a/mcp", headers: { authorization: "Bearer sk-123" } } } })).toEqual([
      'mcp.servers.s.headers: an Authorization header must take its secret from the runner\'s environment, e.g. "Bearer ${API_TOKEN}"',
    ]);
  });

  it("emits a JSON Schema with the field docs, for the editor's hovers", () => {
    const schema = JSON.stringify(z.toJSONSchema(McpConfig, { io: "input" }));
    expect(schema).toContain("node_modules/.bin first");
    expect(schema).toContain("hung tool fails as a tool timeout");
  });
});

describe("runner MCP settings", () => {
  it("stdio on and no shared secrets by default", () => {
    const env = loadEnv({});
    expect(env.MCP_ALLOW_STDIO).toBe(true);
    expect(env.MCP_SECRET_VARS).toEqual([]);
    expect(mcpSecrets(env, { GITHUB_TOKEN: "x" })).toEqual({ allowed: [], values: {} });
  });

  it("MCP_ALLOW_STDIO=false turns stdio off; a typo is an error", () => {
    expect(loadEnv({ MCP_ALLOW_STDIO: "false" }).MCP_ALLOW_STDIO).toBe(false);
    expect(loadEnv({ MCP_ALLOW_STDIO: "off" }).MCP_ALLOW_STDIO).toBe(false);
    expect(() => loadEnv({ MCP_ALLOW_STDIO: "nope" })).toThrow(/MCP_ALLOW_STDIO/);
  });

  it("MCP_SECRET_VARS shares only the variables it lists, and never the runner's own token", () => {
    const env = loadEnv({ MCP_SECRET_VARS: " GITHUB_TOKEN, BRAVE_KEY ,," });
    expect(env.MCP_SECRET_VARS).toEqual(["GITHUB_TOKEN", "BRAVE_KEY"]);
    expect(mcpSecrets(env, { GITHUB_TOKEN: "g", OTHER: "o" })).toEqual({ allowed: ["GITHUB_TOKEN", "BRAVE_KEY"], values: { GITHUB_TOKEN: "g" } });
    expect(() => loadEnv({ MCP_SECRET_VARS: "GITHUB_TOKEN,RUNNER_TOKEN" })).toThrow(/RUNNER_TOKEN is one of Rollbook's own settings/);
    expect(() => loadEnv({ MCP_SECRET_VARS: "NOT-A-NAME" })).toThrow(/MCP_SECRET_VARS lists variable names/);
  });
});
