/**
 * One MCP server of one run, through the official SDK's Client and transports: connect (start or reach
 * it, initialize, list its tools) within a time limit, call tools, notice when it breaks, and close it
 * so that nothing of it is left running. It never throws out of connect() or close(): a server that
 * cannot be used ends up "failed" with a reason that names it, and calls to it reject with that reason.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type CallToolResult, ErrorCode, McpError as SdkMcpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { McpConfig, McpLaunchServer, McpServerStatus, ToolSpec } from "../../../contracts";
import { describeError, isConnectionFailure, McpError, seconds } from "./errors";
import { endGroup, trackGroup } from "./process-group";
import type { StdioSandboxSettings } from "./sandbox";
import type { EgressAllow } from "../net/egress-policy";
import type { McpSecrets } from "./secrets";
import { StderrTail } from "./stderr-tail";
import { createTransport, describeTarget } from "./transports";
import { type ArgumentsCheck, ToolArgumentsValidator } from "./tool-arguments";
import { type McpToolResult, toToolResult, toToolSpec } from "./tool-result";

export type McpLimits = Omit<McpConfig, "servers">;

export interface ConnectionHost {
  allowStdio: boolean;
  secrets: McpSecrets;
  repoRoot: string;
  /** Where stdio servers run: the bubblewrap sandbox (always, on the runner); null only in tests of process handling. */
  sandbox: StdioSandboxSettings | null;
  /** The operator's EGRESS_ALLOW, for http/sse servers. */
  egress: EgressAllow;
  /** How long a stdio server gets after stdin closes, and again after SIGTERM, before SIGKILL. */
  closeGraceMs: number;
  stderrLines: number;
  /** Called when the server becomes ready, fails (at connect or later) or is closed. */
  onChange?: (status: McpServerStatus) => void;
}

export interface McpCallOptions {
  /** Abort the call (the rollout or run ended); it rejects with kind "aborted" and the server is told. */
  signal?: AbortSignal;
  /** Overrides mcp.call_timeout_ms for this call. */
  timeoutMs?: number;
}

const CLIENT_INFO = { name: "rollbook-runner", version: "0.1.0" };
/** A server with more pages of tools than this is broken or hostile; stop listing. */
const MAX_TOOL_PAGES = 100;

/** Ends a connect phase early with a reason of ours (timeout, invalid JSON-RPC, exit, stop). */
class AttemptEnded extends Error {}

function isProtocolViolation(err: unknown): boolean {
  if (err instanceof SyntaxError) return true; // JSON.parse of a stdout line / SSE event
  if (err instanceof Error && (err.name === "ZodError" || /ReadBuffer exceeded/.test(err.message))) return true;
  return false;
}

function violation(err: unknown): string {
  if (err instanceof Error && err.name === "ZodError") return "a JSON message that is not JSON-RPC";
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

export class McpConnection {
  readonly target: string;
  private stateValue: McpServerStatus["state"] = "connecting";
  private error: string | null = null;
  private client: Client | null = null;
  private transport: Transport | null = null;
  private stdio: StdioClientTransport | null = null;
  private ownGroup = false;
  private pid: number | null = null;
  private specs: ToolSpec[] = [];
  private offered = new Set<string>();
  /** Each offered tool's arguments check, compiled from its inputSchema when the server was listed. */
  private checks = new Map<string, ArgumentsCheck>();
  private readonly stderr: StderrTail;
  /** Set once we close the transport ourselves, so its close is not taken for a crash. */
  private closing = false;
  private shutdownPromise: Promise<void> | null = null;
  /** While a connect phase runs: ends it with a reason. Between phases a reason waits in `pendingEnd`. */
  private endAttempt: ((reason: string) => void) | null = null;
  private pendingEnd: string | null = null;

  constructor(
    readonly name: string,
    private readonly config: McpLaunchServer,
    private readonly limits: McpLimits,
    private readonly host: ConnectionHost,
  ) {
    this.target = describeTarget(config);
    this.stderr = new StderrTail(host.stderrLines);
  }

  get state(): McpServerStatus["state"] {
    return this.stateValue;
  }

  private get label(): string {
    return `MCP server '${this.name}' (${this.target})`;
  }

  tools(): ToolSpec[] {
    return this.stateValue === "ready" ? this.specs.map((s) => structuredClone(s)) : [];
  }

  status(): McpServerStatus {
    const running = this.stateValue === "ready" || this.stateValue === "connecting";
    return {
      name: this.name,
      transport: this.config.transport,
      target: this.target,
      state: this.stateValue,
      tools: this.specs.map((s) => s.function.name),
      error: this.error,
      pid: running ? (this.stdio?.pid ?? this.pid) : null,
      stderr: this.stderr.lines(),
    };
  }

  /** Start or reach the server, initialize, list its tools. Never throws; see state / status(). */
  async connect(signal?: AbortSignal): Promise<void> {
    try {
      await this.doConnect(signal);
    } catch (err) {
      // doConnect maps every failure it expects; this is the net under it, so nothing escapes to the run.
      await this.fail(`failed to connect: ${describeError(err)}`);
    }
  }

  private async doConnect(signal?: AbortSignal): Promise<void> {
    const made = createTransport(this.config, this.host, (chunk) => this.stderr.push(chunk), this.name);
    if (!made.ok) return this.fail(made.error);
    const { transport } = made;
    this.transport = transport;
    this.stdio = made.stdio;
    this.ownGroup = made.ownGroup;
    // Protocol.connect chains these after ours, so they see every error and the close first.
    transport.onerror = (err) => this.onTransportError(err);
    transport.onclose = () => this.onTransportClose();
    if (made.stdio) {
      const stdio = made.stdio;
      const start = stdio.start.bind(stdio);
      // The pid exists only once the transport has spawned; learn it then so the runner's exit hook can
      // kill the group even if the runner dies while this server is still connecting.
      stdio.start = async () => {
        const pending = start();
        this.pid = stdio.pid;
        if (this.pid !== null && this.ownGroup) trackGroup(this.pid);
        return pending;
      };
    }
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    this.client = client;
    const connectMs = this.limits.connect_timeout_ms;
    try {
      await this.phase(client.connect(transport, { timeout: connectMs }), connectMs, `did not answer initialize within ${seconds(connectMs)}`, signal);
    } catch (err) {
      return this.fail(err instanceof AttemptEnded ? err.message : this.initializeFailure(err));
    }

    const capabilities = client.getServerCapabilities() ?? {};
    if (!capabilities.tools) {
      const has = Object.keys(capabilities).join(", ") || "nothing";
      return this.fail(`offers no tools (it declares: ${has}); only MCP tools are used by runs`);
    }

    const listMs = this.limits.list_timeout_ms;
    const tools: Tool[] = [];
    try {
      let cursor: string | undefined;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const listed = await this.phase(
          client.listTools(cursor ? { cursor } : undefined, { timeout: listMs }),
          listMs,
          `did not list its tools within ${seconds(listMs)}`,
          signal,
        );
        tools.push(...listed.tools);
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
    } catch (err) {
      if (err instanceof AttemptEnded) return this.fail(err.message);
      if (err instanceof SdkMcpError && err.code === ErrorCode.RequestTimeout) return this.fail(`did not list its tools within ${seconds(listMs)}`);
      return this.fail(`failed to list its tools: ${describeError(err)}`);
    }

    const byName = new Map(tools.map((t) => [t.name, t]));
    const wanted = this.config.tools ?? [...byName.keys()];
    const missing = wanted.filter((t) => !byName.has(t));
    if (missing.length) {
      const offers = [...byName.keys()].join(", ") || "none";
      return this.fail(`has no tool ${missing.map((t) => `'${t}'`).join(", ")} (config "tools"); it offers: ${offers}`);
    }
    const specs = wanted.map((t) => toToolSpec(byName.get(t)!));
    // Checked against what the model is shown (the spec's parameters), compiled once here: a schema ajv
    // cannot use would leave a tool's calls unchecked, so the server fails now, naming the tool.
    const validator = new ToolArgumentsValidator();
    const checks = new Map<string, ArgumentsCheck>();
    for (const spec of specs) {
      const compiled = validator.compile(spec.function.parameters ?? { type: "object" });
      if (!compiled.ok) return this.fail(`offers tool '${spec.function.name}' with an input schema its arguments cannot be checked against: ${compiled.error}`);
      checks.set(spec.function.name, compiled.check);
    }
    this.specs = specs;
    this.offered = new Set(wanted);
    this.checks = checks;
    if (this.stateValue !== "connecting") return; // closed meanwhile
    this.stateValue = "ready";
    this.host.onChange?.(this.status());
  }

  /** Race one connect phase against its time limit, the run's stop signal and the server breaking. */
  private phase<T>(work: Promise<T>, ms: number, timeoutReason: string, signal?: AbortSignal): Promise<T> {
    work.catch(() => undefined); // it may lose the race; its rejection is then nobody's business
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => end("was not connected: the run was stopped while it connected");
      const timer = setTimeout(() => end(timeoutReason), ms);
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        this.endAttempt = null;
      };
      const end = (reason: string) => {
        cleanup();
        reject(new AttemptEnded(reason));
      };
      this.endAttempt = end;
      if (this.pendingEnd) return end(this.pendingEnd);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      work.then(
        (value) => {
          cleanup();
          resolve(value);
        },
        (err: unknown) => {
          cleanup();
          reject(err);
        },
      );
    });
  }

  private initializeFailure(err: unknown): string {
    if (err instanceof SdkMcpError && err.code === ErrorCode.RequestTimeout) {
      return `did not answer initialize within ${seconds(this.limits.connect_timeout_ms)}`;
    }
    if (err instanceof SdkMcpError && err.code === ErrorCode.ConnectionClosed) {
      return this.stdio ? "exited before answering initialize" : "closed the connection before answering initialize";
    }
    if (err instanceof Error && /protocol version is not supported|invalid initialize result/i.test(err.message)) {
      return `sent an initialize result this client cannot use: ${err.message}`;
    }
    return `${this.stdio ? "failed to start" : "failed to connect"}: ${describeError(err)}`;
  }

  private onTransportError(err: unknown): void {
    // Other transport errors (a failed optional SSE stream, EPIPE after an exit) are followed by a
    // failed call or a close, which say more; only a broken protocol ends the server here.
    if (!isProtocolViolation(err)) return;
    this.breakWith(`sent invalid JSON-RPC: ${violation(err)}`);
  }

  private onTransportClose(): void {
    if (this.closing) return;
    if (this.stdio) {
      this.breakWith(this.stateValue === "connecting" ? "exited before answering initialize" : "exited during the run");
    } else if (this.stateValue === "ready") {
      // An HTTP transport closes only when a client closes it; while connecting that is the SDK giving up
      // after a failed request, whose rejection carries the reason (ECONNREFUSED, HTTP 404, …).
      this.breakWith("closed the connection during the run");
    }
  }

  private breakWith(reason: string): void {
    if (this.stateValue === "connecting") {
      if (this.endAttempt) this.endAttempt(reason);
      else this.pendingEnd ??= reason;
    } else if (this.stateValue === "ready") {
      void this.fail(reason);
    }
  }

  /** Mark failed with a reason (at once, so calls reject from now on), then end the server. */
  private fail(reason: string): Promise<void> {
    if (this.stateValue === "failed" || this.stateValue === "closed") return this.shutdown();
    this.stateValue = "failed";
    this.error = `${this.label} ${reason}`;
    return this.shutdown().then(() => {
      // Only now is stderr complete (the process is gone), and the reason can quote it.
      this.error = `${this.label} ${reason}${this.stderr.note()}`;
      this.host.onChange?.(this.status());
    });
  }

  async call(tool: string, args: unknown, options: McpCallOptions = {}): Promise<McpToolResult> {
    if (this.stateValue !== "ready" || !this.client) throw new McpError(this.name, "unavailable", this.unavailable(tool), tool);
    if (!this.offered.has(tool)) {
      const offered = [...this.offered].join(", ") || "none";
      throw new McpError(this.name, "tool", `MCP server '${this.name}' offers no tool '${tool}' to this run (its tools: ${offered})`, tool);
    }
    const input = args === undefined || args === null ? {} : args;
    if (typeof input !== "object" || Array.isArray(input)) {
      throw new McpError(this.name, "tool", `MCP server '${this.name}': the arguments of tool '${tool}' must be a JSON object, not ${Array.isArray(input) ? "an array" : typeof input}`, tool);
    }
    // Arguments that do not fit the tool's schema never reach the server. The model gets what MCP asks a
    // server to answer them with (a tool execution error, isError, so it can correct the call), hand-written
    // loops and runAgent alike; the rollout counts the call as malformed (rollout/execute.ts).
    const problem = this.checks.get(tool)?.(input as Record<string, unknown>) ?? null;
    if (problem !== null) return { text: `Tool '${tool}' was not called: ${problem}`, isError: true };
    const { signal } = options;
    if (signal?.aborted) throw this.aborted(tool);
    const timeoutMs = options.timeoutMs ?? this.limits.call_timeout_ms;
    try {
      const result = await this.client.callTool({ name: tool, arguments: input as Record<string, unknown> }, undefined, { signal, timeout: timeoutMs });
      return toToolResult(result as CallToolResult, this.limits.max_result_chars);
    } catch (err) {
      throw await this.callError(tool, err, timeoutMs, signal);
    }
  }

  private aborted(tool: string): McpError {
    return new McpError(this.name, "aborted", `MCP server '${this.name}': the call to tool '${tool}' was cancelled (the rollout ended)`, tool);
  }

  private unavailable(tool: string): string {
    return `${this.whyUnavailable()}; cannot call tool '${tool}'`;
  }

  private whyUnavailable(): string {
    if (this.stateValue === "failed") return this.error ?? `${this.label} failed`;
    if (this.stateValue === "closed") return `${this.label} is closed (the run's MCP servers were shut down)`;
    return `${this.label} is still connecting`;
  }

  private async callError(tool: string, err: unknown, timeoutMs: number, signal?: AbortSignal): Promise<McpError> {
    if (signal?.aborted) return this.aborted(tool);
    const server = this.name;
    if (this.stateValue !== "ready") {
      // The server broke during the call: wait until it is ended so the reason carries its stderr.
      await this.shutdownPromise;
      return new McpError(server, "unavailable", `${this.whyUnavailable()}; the call to tool '${tool}' did not finish`, tool);
    }
    if (err instanceof SdkMcpError) {
      if (err.code === ErrorCode.RequestTimeout) {
        return new McpError(server, "timeout", `MCP server '${server}': tool '${tool}' did not answer within ${seconds(timeoutMs)}`, tool);
      }
      return new McpError(server, "tool", `MCP server '${server}': tool '${tool}' failed: ${err.message}`, tool);
    }
    if (err instanceof Error && err.name === "ZodError") {
      return new McpError(server, "protocol", `MCP server '${server}': tool '${tool}' returned a result that is not an MCP tool result`, tool);
    }
    if (this.config.transport !== "stdio" && isConnectionFailure(err)) {
      await this.fail(`stopped answering: ${describeError(err)}`);
      return new McpError(server, "unavailable", `${this.error}; the call to tool '${tool}' did not finish`, tool);
    }
    return new McpError(server, "protocol", `MCP server '${server}': the call to tool '${tool}' failed: ${describeError(err)}`, tool);
  }

  /** Close the client and end the server (its whole process group for stdio). Never throws. */
  async close(): Promise<void> {
    if (this.stateValue === "connecting" || this.stateValue === "ready") {
      this.pendingEnd ??= "was closed before it was ready";
      this.endAttempt?.(this.pendingEnd);
      this.stateValue = "closed";
      await this.shutdown();
      this.host.onChange?.(this.status());
      return;
    }
    await this.shutdown();
  }

  private shutdown(): Promise<void> {
    this.shutdownPromise ??= this.doShutdown().catch((err: unknown) => {
      process.stderr.write(`[mcp] closing ${this.label}: ${describeError(err)}\n`);
    });
    return this.shutdownPromise;
  }

  private async doShutdown(): Promise<void> {
    this.closing = true;
    const { client, transport, stdio } = this;
    const pid = stdio?.pid ?? this.pid;
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      // Politely end the HTTP session so the server frees it; never wait long for that.
      await within(transport.terminateSession().catch(() => undefined), 1_000);
    }
    // For stdio the SDK ends stdin (the MCP way to ask a server to leave) and escalates on its own pid.
    const closed = (client?.transport ? client.close() : (transport?.close() ?? Promise.resolve())).catch(() => undefined);
    if (pid !== null && pid !== undefined) await endGroup(pid, this.ownGroup, this.host.closeGraceMs);
    await within(closed, this.host.closeGraceMs * 2 + 2_000);
    await new Promise<void>((resolve) => setImmediate(resolve)); // let the stderr pipe deliver its last lines
  }
}

/** Wait for `work`, at most `ms`; the timer is cleared either way so it holds nothing open. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
