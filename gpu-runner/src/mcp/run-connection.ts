/**
 * A run's MCP servers as the run loop and the rollouts see them: connect the experiment's servers when the
 * run starts (McpHub), report which are ready and which failed, adapt the hub to the rollouts' RunMcp, and
 * close everything when the run ends.
 *
 * A tool-level failure (the server answered with a JSON-RPC error, an unknown tool, arguments that are not
 * an object) is the model's mistake to see and fix, so it reaches the sandbox as a ToolError, which
 * runAgent answers in the conversation; an unavailable, hung or broken server is the rollout's failure
 * (McpError, kind "mcp"). Arguments that do not match a tool's input schema come back as an isError result.
 */
import { NO_MASK, type McpLaunchConfig, type McpServerStatus, type SecretMask } from "../../../contracts";
import type { McpConnection } from "../loop/run-loop";
import type { RunMcp } from "../rollout/run-mcp";
import { McpError } from "./errors";
import { McpHub, type McpConnectOptions } from "./hub";

export interface RunMcpOptions extends Omit<McpConnectOptions, "onChange"> {
  /** A server's state changed after the run started (it died mid-run): a line for the run log. */
  onProblem?: (message: string) => void;
  /**
   * The run's secrets: masked in everything a server sends back (tool lists, results, errors) before the
   * scenario or the model sees it, so an echoed key never enters a prompt, a token log or a transcript.
   */
  mask?: SecretMask;
}

/** A value with every string in it masked (JSON round trip: tool results are plain JSON). */
function masked<T>(mask: SecretMask, value: T): T {
  return mask.empty ? value : (JSON.parse(mask.mask(JSON.stringify(value))) as T);
}

function describe(s: McpServerStatus): string {
  if (s.state === "ready") return `MCP server '${s.name}' (${s.target}) is ready: ${s.tools.length} tool${s.tools.length === 1 ? "" : "s"} (${s.tools.join(", ")})`;
  return s.error ?? `MCP server '${s.name}' (${s.target}) is ${s.state}`;
}

class ToolError extends Error {
  override readonly name = "ToolError";
}

export async function connectRunMcp(config: McpLaunchConfig, options: RunMcpOptions): Promise<McpConnection> {
  const hub = new McpHub();
  const mask = options.mask ?? NO_MASK;
  let connected = false;
  await hub.connect(config, {
    ...options,
    onChange: (s) => {
      if (connected && s.state === "failed") options.onProblem?.(describe(s));
    },
  });
  connected = true;
  const statuses = hub.status();
  const mcp: RunMcp = {
    servers: hub.servers,
    list: async () =>
      masked(
        mask,
        hub.status().map((s) => ({ name: s.name, ok: s.state === "ready", ...(s.state === "ready" ? {} : { error: describe(s) }), tools: hub.tools(s.name) })),
      ),
    call: async (server, tool, args, signal) => {
      try {
        return masked(mask, await hub.call(server, tool, args, { signal }));
      } catch (err) {
        if (err instanceof Error) err.message = mask.mask(err.message);
        if (err instanceof McpError && err.kind === "tool") throw new ToolError(err.message);
        throw err;
      }
    },
  };
  return {
    mcp,
    ready: statuses.filter((s) => s.state === "ready").map(describe),
    problems: statuses.filter((s) => s.state !== "ready").map(describe),
    close: () => hub.close(),
  };
}
