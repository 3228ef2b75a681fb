/**
 * The editors' and MCP inspector's `mcpServers` in config.json: each shape it maps from, each refusal naming
 * its field at its line and column, and the warning that says what it became.
 */
import { describe, expect, it } from "vitest";
import { parseRunConfig } from "./config-parse";
import { configSourcePath } from "./mcp-servers-paste";

const config = (mcpServers: unknown, extra: Record<string, unknown> = {}) => JSON.stringify({ ...extra, mcpServers }, null, 2);

const errors = (text: string) => {
  const r = parseRunConfig(text);
  return r.diagnostics.filter((d) => d.severity === "error");
};

describe("mcpServers (the editors' MCP config) in config.json", () => {
  it("maps each remote type spelling onto mcp.servers, with its headers, and says what it became", () => {
    const text = config({
      web: { type: "http", url: "https://mcp.example.com/mcp" },
      inspector: { type: "streamable-http", url: "https://a.example.com/mcp", headers: { Authorization: "Bearer ${A_TOKEN}" } },
      cline: { type: "streamableHttp", url: "https://b.example.com/mcp" },
      legacy: { type: "sse", url: "https://c.example.com/sse", headers: { "X-Api-Key": "${C_KEY}" } },
      cursor: { url: "https://d.example.com/mcp" },
      fastmcp: { transport: "streamable-http", url: "https://e.example.com/mcp" },
      bare_sse: { url: "https://f.example.com/sse?x=1" },
    });
    const r = parseRunConfig(text, "train");
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.config.mcp.servers).toEqual({
      web: { transport: "http", url: "https://mcp.example.com/mcp", headers: {} },
      inspector: { transport: "http", url: "https://a.example.com/mcp", headers: { Authorization: "Bearer ${A_TOKEN}" } },
      cline: { transport: "http", url: "https://b.example.com/mcp", headers: {} },
      legacy: { transport: "sse", url: "https://c.example.com/sse", headers: { "X-Api-Key": "${C_KEY}" } },
      cursor: { transport: "http", url: "https://d.example.com/mcp", headers: {} },
      fastmcp: { transport: "http", url: "https://e.example.com/mcp", headers: {} },
      bare_sse: { transport: "sse", url: "https://f.example.com/sse?x=1", headers: {} },
    });
    expect(r.diagnostics).toHaveLength(7);
    expect(r.diagnostics[0]).toEqual({
      file: "config.json",
      line: 3,
      column: 5,
      severity: "warning",
      message: "mcpServers.web → mcp.servers.web (http: https://mcp.example.com/mcp)",
    });
    expect(r.diagnostics[3]?.message).toBe("mcpServers.legacy → mcp.servers.legacy (sse: https://c.example.com/sse)");
  });

  it("keeps servers written in mcp.servers and its limits beside the pasted ones", () => {
    const text = config({ web: { type: "http", url: "https://a.example.com/mcp" } }, { mcp: { call_timeout_ms: 5000, servers: { everything: { transport: "stdio", server: "everything" } } } });
    const r = parseRunConfig(text);
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.config.mcp.call_timeout_ms).toBe(5000);
    expect(Object.keys(r.config.mcp.servers)).toEqual(["everything", "web"]);
  });

  it("refuses a stdio server (a command) at its command, saying how to name a registered one instead", () => {
    const text = '{\n  "mcpServers": {\n    "fs": {\n      "command": "npx",\n      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]\n    }\n  }\n}';
    const found = errors(text);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ line: 4, column: 7 });
    expect(found[0]?.message).toMatch(/^mcpServers\.fs\.command: experiments cannot start commands on the shared runner: a workspace admin registers `npx -y @modelcontextprotocol\/server-filesystem \/tmp`/);
    expect(found[0]?.message).toContain('"mcp": { "servers": { "fs": { "transport": "stdio", "server": "<its registered name>" } } }');
    // "type": "stdio" with no command is refused at the type.
    expect(errors(config({ s: { type: "stdio" } }))[0]?.message).toMatch(/^mcpServers\.s\.type: experiments cannot start commands/);
  });

  it("refuses literal secrets in env and headers, naming the variable or header", () => {
    const found = errors(config({ github: { command: "github-mcp", env: { GITHUB_TOKEN: "ghp_abc", LOG: "info", OK_KEY: "${OK_KEY}" } } }));
    expect(found.map((d) => d.message)).toContain('mcpServers.github.env.GITHUB_TOKEN: a literal secret; use a workspace secret reference (Team → Secrets), e.g. "${GITHUB_TOKEN}"');
    expect(found.some((d) => d.message.startsWith("mcpServers.github.env.LOG") || d.message.startsWith("mcpServers.github.env.OK_KEY"))).toBe(false);
    expect(errors(config({ r: { type: "sse", url: "https://a.example.com/sse", headers: { "X-Api-Key": "sk-1" } } })).map((d) => d.message)).toEqual([
      'mcpServers.r.headers.X-Api-Key: a literal secret; use a workspace secret reference (Team → Secrets), e.g. "${X_API_KEY}"',
    ]);
  });

  it("holds pasted servers to mcp.servers' own rules, reported at the pasted keys", () => {
    const text = '{\n  "mcpServers": {\n    "r": { "type": "http", "url": "ftp://x/y", "headers": { "Authorization": "Bearer sk-1" }, "autoApprove": [] }\n  }\n}';
    const found = errors(text);
    expect(found.map((d) => d.message).sort()).toEqual([
      'mcpServers.r.headers: an Authorization header must take its secret from a workspace secret, e.g. "Bearer ${API_TOKEN}"',
      "mcpServers.r.autoApprove: unknown field",
      "mcpServers.r.url: an http:// or https:// URL",
    ].sort());
    expect(found.find((d) => d.message.startsWith("mcpServers.r.url"))).toMatchObject({ line: 3, column: 28 });
    expect(errors(config({ "my-server": { url: "https://a.example.com/mcp" } }))[0]?.message).toBe("mcpServers.my-server: Invalid key in record");
    expect(errors(config({ r: { type: "http", url: "https://a.example.com/mcp", headers: { A: "${env:HOME}" } } }))[0]?.message).toMatch(/^mcpServers\.r\.headers\.A: write secrets as \$\{NAME\}/);
  });

  it("refuses a server named both in mcpServers and mcp.servers, naming both", () => {
    const text = config({ web: { url: "https://a.example.com/mcp" } }, { mcp: { servers: { web: { transport: "http", url: "https://b.example.com/mcp" } } } });
    expect(errors(text).map((d) => d.message)).toEqual(["mcpServers.web: also named in mcp.servers.web: keep one of the two"]);
  });

  it("names what is not a server: an unknown type, no command or url, a transport key, a non-object", () => {
    const messages = (servers: unknown) => errors(config(servers)).map((d) => d.message);
    expect(messages({ r: { type: "websocket", url: "wss://a" } })).toEqual(['mcpServers.r.type: type must be "stdio", "sse", "http", "streamable-http" or "streamableHttp"']);
    expect(messages({ r: { args: [] } })).toEqual(['mcpServers.r: give "command" (a stdio server) or "url" (a remote server, with "type": "http" or "sse")']);
    expect(messages({ r: { type: "http", transport: "http", url: "https://a.example.com/mcp" } })[0]).toMatch(/^mcpServers\.r\.transport: unknown field: editors' configs say "type"/);
    expect(messages({ r: { transport: "ws", url: "wss://a" } })).toEqual(['mcpServers.r.transport: transport must be "stdio", "sse", "http", "streamable-http" or "streamableHttp"']);
    expect(messages({ r: "https://a.example.com/mcp" })[0]).toMatch(/^mcpServers\.r: a server: /);
    expect(messages([])[0]).toMatch(/^mcpServers: servers by name/);
  });

  it("finds a pasted server's keys for checks made after parsing (the runner's egress check)", () => {
    const text = config({ web: { url: "https://a.example.com/mcp" } });
    expect(configSourcePath(text, ["mcp", "servers", "web", "url"])).toEqual(["mcpServers", "web", "url"]);
    expect(configSourcePath(text, ["mcp", "servers", "web", "transport"])).toEqual(["mcpServers", "web", "type"]);
    expect(configSourcePath(text, ["judge", "base_url"])).toEqual(["judge", "base_url"]);
    expect(configSourcePath('{"mcp": {"servers": {"web": {"transport": "http", "url": "https://a/mcp"}}}}', ["mcp", "servers", "web", "url"])).toEqual(["mcp", "servers", "web", "url"]);
  });
});
