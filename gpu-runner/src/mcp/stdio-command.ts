/**
 * How a stdio server's command is started: looked up in the repository's node_modules/.bin first (so
 * `"command": "mcp-server-everything"` works on a box without internet), then the system's PATH; run in
 * the bubblewrap sandbox (sandbox.ts) through `setsid` so it leads its own process group
 * (process-group.ts); with only the environment its definition names. The SDK's StdioClientTransport does
 * the spawning and speaking; this only prepares its parameters.
 */
import path from "node:path";
import { getDefaultEnvironment, type StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { findExecutable } from "./executable";
import { findBwrap, sandboxedLaunch, type StdioSandboxSettings } from "./sandbox";

export { findExecutable };

let setsidPath: string | null | undefined;
/**
 * util-linux's setsid, when it exists. Started as a child that is not a group leader, it calls setsid()
 * and execs the command in place, so the pid the SDK sees *is* the server's, and leads a new group.
 * Node's spawn would give us that with `detached: true`, but the SDK's transport does not expose it.
 */
function setsid(): string | null {
  if (setsidPath === undefined) {
    const dirs = (getDefaultEnvironment().PATH ?? "").split(path.delimiter);
    setsidPath = process.platform === "linux" ? findExecutable("setsid", [...dirs, "/usr/bin", "/bin"], "/") : null;
  }
  return setsidPath;
}

export interface StdioLaunch {
  params: StdioServerParameters;
  /** True when the server leads its own process group (pid = pgid), so its children can be signalled too. */
  ownGroup: boolean;
}

export type LaunchResult = { ok: true; launch: StdioLaunch } | { ok: false; error: string };

/**
 * How to start a stdio server: its command resolved (the repository's node_modules/.bin first, then the
 * system's bin folders), wrapped in the bubblewrap sandbox (sandbox.ts) unless `sandbox` is null, and led
 * by setsid. The runner always passes a sandbox; null is for the tests of process handling, which need
 * the server's own pid and files.
 */
export function prepareStdioLaunch(
  spec: { command: string; args: readonly string[]; env: Record<string, string>; network: boolean },
  host: { repoRoot: string; sandbox: StdioSandboxSettings | null },
): LaunchResult {
  const binDir = path.join(host.repoRoot, "node_modules/.bin");
  // Sandboxed, the server's PATH is the system's (sandbox.ts); unsandboxed, the one the SDK gives the child.
  const childPath = host.sandbox ? "/usr/local/bin:/usr/bin:/bin" : (spec.env.PATH ?? getDefaultEnvironment().PATH ?? "");
  const resolved = findExecutable(spec.command, [binDir, ...childPath.split(path.delimiter)], host.repoRoot);
  if (!resolved) {
    return { ok: false, error: `spawn ${spec.command} ENOENT (not an executable in ${binDir} or on PATH)` };
  }
  let command = resolved;
  let args = [...spec.args];
  let env = spec.env;
  let cwd = host.repoRoot;
  if (host.sandbox) {
    const bwrap = findBwrap();
    if (!bwrap) {
      return {
        ok: false,
        error: "bubblewrap (bwrap) is missing or cannot create a sandbox on this runner, and stdio MCP servers run only inside it (Debian: apt-get install bubblewrap)",
      };
    }
    const boxed = sandboxedLaunch(bwrap, { command: resolved, args, env, network: spec.network }, host.sandbox);
    if (!boxed.ok) return boxed;
    ({ command, args, env } = boxed);
    cwd = "/";
  }
  const wrapper = setsid();
  return {
    ok: true,
    launch: {
      ownGroup: wrapper !== null,
      params: {
        command: wrapper ?? command,
        args: wrapper ? [command, ...args] : args,
        env,
        cwd,
        // Piped, so failures can quote it (stderr-tail.ts) and it never mixes into the runner's own output.
        stderr: "pipe",
      },
    },
  };
}
