/**
 * The SDK transport for one configured server: StdioClientTransport (spawned as prepared by
 * stdio-command.ts), StreamableHTTPClientTransport or SSEClientTransport, with `${NAME}` secrets filled
 * in. What cannot even be attempted (stdio turned off, a secret missing, no such command) is a reason,
 * not an exception.
 */
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { McpLaunchServer } from "../../../contracts";
import { type EgressAllow, NO_EGRESS_EXCEPTIONS } from "../net/egress-policy";
import { createGuardedFetch } from "../net/guarded-fetch";
import type { StdioSandboxSettings } from "./sandbox";
import { type McpSecrets, resolveSecretRefs } from "./secrets";
import { prepareStdioLaunch } from "./stdio-command";

export type MadeTransport =
  | { ok: true; transport: Transport; stdio: StdioClientTransport | null; ownGroup: boolean }
  | { ok: false; error: string };

/** `stdio: <command line>` or `http: <url>`: how messages name where a server lives. */
export function describeTarget(config: McpLaunchServer): string {
  if (config.transport !== "stdio") return `${config.transport}: ${config.url}`;
  const line = [config.command, ...config.args].join(" ");
  return `stdio: ${line.length > 120 ? `${line.slice(0, 119)}…` : line}`;
}

export function createTransport(
  config: McpLaunchServer,
  /** `egress`: the operator's EGRESS_ALLOW for http/sse servers (none: only public addresses). */
  host: { allowStdio: boolean; secrets: McpSecrets; repoRoot: string; sandbox: StdioSandboxSettings | null; egress?: EgressAllow },
  onStderr: (chunk: Buffer) => void,
  /** The server's name in config.json, for messages ("mcp.servers.<name>.url: …"). */
  name: string,
): MadeTransport {
  if (config.transport === "stdio") {
    if (!host.allowStdio) {
      return {
        ok: false,
        error: 'was not started: this runner does not run stdio MCP servers (MCP_ALLOW_STDIO=false); use an "http" or "sse" server',
      };
    }
    const env = resolveSecretRefs(config.env, "env", host.secrets);
    if (!env.ok) return { ok: false, error: `was not started: ${env.error}` };
    const prepared = prepareStdioLaunch({ command: config.command, args: config.args, env: env.values, network: config.network }, host);
    if (!prepared.ok) return { ok: false, error: `failed to start: ${prepared.error}` };
    const stdio = new StdioClientTransport(prepared.launch.params);
    // Always drained: an unread pipe would fill up and block the server.
    stdio.stderr?.on("data", onStderr);
    stdio.stderr?.on("error", () => undefined);
    return { ok: true, transport: stdio, stdio, ownGroup: prepared.launch.ownGroup };
  }
  const headers = resolveSecretRefs(config.headers, "headers", host.secrets);
  if (!headers.ok) return { ok: false, error: `was not connected: ${headers.error}` };
  const url = new URL(config.url);
  const requestInit = { headers: headers.values };
  // Every connection (the POSTs, the SSE stream, redirects the SDK follows) is checked where it connects.
  const fetch = createGuardedFetch({ field: `mcp.servers.${name}.url`, actor: "this runner", allow: host.egress ?? NO_EGRESS_EXCEPTIONS });
  const transport =
    config.transport === "http"
      ? new StreamableHTTPClientTransport(url, { requestInit, fetch })
      : new SSEClientTransport(url, { requestInit, fetch, eventSourceInit: { fetch } });
  return { ok: true, transport, stdio: null, ownGroup: false };
}
