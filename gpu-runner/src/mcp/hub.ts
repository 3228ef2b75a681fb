/**
 * The MCP servers of one run. The run creates a hub, connects it once (all servers at once, each within
 * the connect timeout), hands the ready servers' tools to the model and routes ctx.mcp calls to them,
 * logs status(), and closes it when the run ends, whatever way it ends. connect() and close() never
 * throw; a broken server costs only the rollouts that call it.
 */
import type { McpLaunchConfig, McpServerStatus, ToolSpec } from "../../../contracts";
import { type ConnectionHost, type McpCallOptions, McpConnection } from "./connection";
import { type EgressAllow, NO_EGRESS_EXCEPTIONS } from "../net/egress-policy";
import { McpError } from "./errors";
import type { StdioSandboxSettings } from "./sandbox";
import { type McpSecrets, NO_SECRETS } from "./secrets";
import type { McpToolResult } from "./tool-result";

export interface McpConnectOptions {
  /** false on a shared runner (MCP_ALLOW_STDIO=false): stdio servers fail with a reason, nothing is spawned. */
  allowStdio: boolean;
  /** What `${NAME}` in env/headers resolves to: the run's workspace secrets; none by default. */
  secrets?: McpSecrets;
  /**
   * Where stdio servers run (sandbox.ts). Required: the runner passes its operator's settings; only the tests
   * of process handling pass null, to see the server's own pid and files.
   */
  sandbox: StdioSandboxSettings | null;
  /** The repository root: its node_modules/.bin is searched first, and relative cwd is taken from it. */
  repoRoot: string;
  /** The operator's EGRESS_ALLOW: internal addresses http/sse servers may be at (none by default). */
  egress?: EgressAllow;
  /** The run's stop signal: servers still connecting give up when it fires. */
  signal?: AbortSignal;
  /** Grace after stdin closes, and after SIGTERM, before a stdio server is killed (default 2000 ms, as the SDK's). */
  closeGraceMs?: number;
  /** stderr lines kept per stdio server (default 20). */
  stderrLines?: number;
  /** Each server's status when it becomes ready, fails (also mid-run) or closes: for the run's event log. */
  onChange?: (status: McpServerStatus) => void;
}

export class McpHub {
  private readonly connections = new Map<string, McpConnection>();
  private connected: Promise<void> | null = null;
  private closed: Promise<void> | null = null;

  /** Connect every server of `config` concurrently; resolves when each is ready or failed. Never rejects. */
  connect(config: McpLaunchConfig, options: McpConnectOptions): Promise<void> {
    if (this.connected) return Promise.reject(new Error("McpHub.connect was already called; create one hub per run"));
    const { servers, ...limits } = config;
    const host: ConnectionHost = {
      allowStdio: options.allowStdio,
      secrets: options.secrets ?? NO_SECRETS,
      repoRoot: options.repoRoot,
      sandbox: options.sandbox,
      egress: options.egress ?? NO_EGRESS_EXCEPTIONS,
      closeGraceMs: options.closeGraceMs ?? 2_000,
      stderrLines: options.stderrLines ?? 20,
      onChange: options.onChange,
    };
    for (const [name, server] of Object.entries(servers)) {
      this.connections.set(name, new McpConnection(name, server, limits, host));
    }
    this.connected = Promise.all([...this.connections.values()].map((c) => c.connect(options.signal))).then(() => undefined);
    return this.connected;
  }

  /** Names of all configured servers, ready or not. */
  get servers(): string[] {
    return [...this.connections.keys()];
  }

  /** A ready server's tools as OpenAI function specs; [] for a failed, closed or unknown server. */
  tools(server: string): ToolSpec[] {
    return this.connections.get(server)?.tools() ?? [];
  }

  /**
   * Call a tool. Resolves with the tool's result, `isError` included (the tool failed and says why: show
   * the model); arguments that do not match the tool's input schema resolve so too, naming the arguments,
   * and are never sent. Rejects with McpError: unavailable (server failed, died or closed: at once, with its
   * reason), timeout, protocol, tool (JSON-RPC error, unknown tool, arguments not an object) or aborted.
   */
  call(server: string, tool: string, args: unknown, options?: McpCallOptions): Promise<McpToolResult> {
    const connection = this.connections.get(server);
    if (!connection) {
      const known = this.servers.join(", ") || "none";
      return Promise.reject(new McpError(server, "unavailable", `no MCP server '${server}' in this run (servers: ${known}); cannot call tool '${tool}'`, tool));
    }
    return connection.call(tool, args, options);
  }

  /** Every server's state, tools and failure reason, for the run log and the runner's status. */
  status(): McpServerStatus[] {
    return [...this.connections.values()].map((c) => c.status());
  }

  /** Close every client and end every stdio server with its children. Idempotent; never rejects. */
  close(): Promise<void> {
    this.closed ??= Promise.all([...this.connections.values()].map((c) => c.close())).then(() => undefined);
    return this.closed;
  }
}
