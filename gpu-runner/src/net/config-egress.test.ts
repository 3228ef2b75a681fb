/**
 * The run-start egress check names the key the user wrote: a server pasted from an editor's config as
 * `mcpServers.<name>` is refused as `mcpServers.<name>.url`, not as the `mcp.servers.<name>.url` it became.
 *   npx vitest run --project unit gpu-runner/src/net/config-egress.test.ts
 */
import { describe, expect, it } from "vitest";
import { configSourcePath, findKeyOffset, parseRunConfig } from "../../../contracts";
import { configEgressProblems } from "./config-egress";
import { NO_EGRESS_EXCEPTIONS, egressAllow } from "./egress-policy";

const TAIL = "this runner sends no requests there unless its operator allows it in EGRESS_ALLOW";

async function problems(text: string, allow = NO_EGRESS_EXCEPTIONS) {
  const parsed = parseRunConfig(text);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return configEgressProblems(parsed.config, allow, { sourcePath: (path) => configSourcePath(text, path) });
}

describe("configEgressProblems", () => {
  it("a pasted mcpServers entry is refused naming mcpServers.<name>.url, positioned at that key", async () => {
    const text = JSON.stringify({ mcpServers: { web: { type: "http", url: "http://127.0.0.1:4100/mcp" } } }, null, 2);
    const [problem, ...more] = await problems(text);
    expect(more).toEqual([]);
    expect(problem!.message).toBe(`mcpServers.web.url: 127.0.0.1 is a loopback address; ${TAIL}`);
    expect(problem!.message).not.toContain("mcp.servers");
    // The path stays the parsed one; mapped back, it finds the pasted key in the text.
    expect(problem!.path).toEqual(["mcp", "servers", "web", "url"]);
    expect(findKeyOffset(text, configSourcePath(text, problem!.path))).toBe(text.indexOf('"url"'));
  });

  it("a server written under mcp.servers, beside a pasted one, keeps its own key", async () => {
    const text = JSON.stringify({
      mcp: { servers: { own: { transport: "sse", url: "http://10.0.0.5/sse" } } },
      mcpServers: { pasted: { url: "http://[::1]:9000/mcp" } },
    });
    const messages = (await problems(text)).map((p) => p.message).sort();
    expect(messages).toEqual([`mcp.servers.own.url: 10.0.0.5 is a private (RFC 1918) address; ${TAIL}`, `mcpServers.pasted.url: ::1 is a loopback address; ${TAIL}`]);
  });

  it("an allow-listed pasted server passes; without sourcePath the parsed key is named", async () => {
    const text = JSON.stringify({ mcpServers: { web: { type: "http", url: "http://127.0.0.1:4100/mcp" } } });
    expect(await problems(text, egressAllow("127.0.0.1:4100"))).toEqual([]);
    const parsed = parseRunConfig(text);
    if (!parsed.ok) throw new Error("config");
    const [plain] = await configEgressProblems(parsed.config, NO_EGRESS_EXCEPTIONS);
    expect(plain!.message).toMatch(/^mcp\.servers\.web\.url: 127\.0\.0\.1 is a loopback address/);
  });
});
