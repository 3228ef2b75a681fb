/**
 * The one error type MCP calls reject with, so the sandbox can tell a tool's failure (which the scenario
 * may catch and show the model) from a server that is gone, without parsing messages.
 */

/**
 * unavailable: the server failed to start, died or is closed; timeout: no answer within the limit;
 * protocol: the server broke MCP (invalid JSON-RPC, a malformed result); tool: the server answered the
 * call with an error, or the call named a tool or arguments the server does not take; aborted: the
 * caller's signal fired (the rollout or run ended).
 */
export type McpErrorKind = "unavailable" | "timeout" | "protocol" | "tool" | "aborted";

export class McpError extends Error {
  override readonly name = "McpError";

  constructor(
    readonly server: string,
    readonly kind: McpErrorKind,
    message: string,
    /** The tool called, when the error belongs to a call. */
    readonly tool?: string,
  ) {
    super(message);
  }
}

/**
 * An error's message with its causes' codes and messages: Node's fetch says only "fetch failed" and
 * keeps "connect ECONNREFUSED 127.0.0.1:9" in `cause`, which is the part a user can act on.
 */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current !== undefined && current !== null && depth < 4; depth++) {
    if (current instanceof Error) {
      const code = (current as { code?: unknown }).code;
      const message = current.message || current.name;
      const withCode = typeof code === "string" && !message.includes(code) ? `${message} (${code})` : message;
      if (!parts.some((p) => p.includes(message))) parts.push(withCode);
      current = (current as { cause?: unknown }).cause;
    } else {
      parts.push(String(current));
      break;
    }
  }
  return parts.join(": ") || "unknown error";
}

/** Network-level failures: the server is not (or no longer) reachable at all. */
export function isConnectionFailure(err: unknown): boolean {
  const codes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"]);
  let current: unknown = err;
  for (let depth = 0; current instanceof Error && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && codes.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** "10 s", "0.5 s": limits in messages read as the user configured them. */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1))} s`;
}
