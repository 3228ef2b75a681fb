/** MCP servers per run: the runner's public surface for the run loop and the sandbox. */
export { McpHub, type McpConnectOptions } from "./hub";
export type { McpCallOptions } from "./connection";
export { McpError, type McpErrorKind } from "./errors";
export { type McpSecrets, NO_SECRETS } from "./secrets";
export type { McpToolResult } from "./tool-result";
