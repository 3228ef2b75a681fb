/**
 * What a rollout needs from the run's MCP servers (the run's McpHub implements it; see gpu-runner/src/mcp/).
 * Kept as a small interface so the rollout code does not depend on how servers are connected.
 */
import type { McpToolResult } from "../../../contracts/sdk/rollbook";
import type { McpServerInfo } from "../../sdk/runtime/host";

export interface RunMcp {
  /** Server names in config order. */
  readonly servers: readonly string[];
  list(): Promise<McpServerInfo[]>;
  call(server: string, tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpToolResult>;
}

/** An experiment without MCP servers. */
export const NO_MCP: RunMcp = {
  servers: [],
  list: () => Promise.resolve([]),
  call: (server) => Promise.reject(Object.assign(new Error(`no MCP server named '${server}': config.json → mcp.servers is empty`), { name: "McpError" })),
};
