/**
 * How a stdio server's command is started: looked up in the repository's node_modules/.bin first (so
 * `"command": "mcp-server-everything"` works on a box without internet), then PATH; run through
 * `setsid` so it leads its own process group (process-group.ts); with only the environment the config
 * names. The SDK's StdioClientTransport does the spawning and speaking; this only prepares its parameters.
 */
import fs from "node:fs";
import path from "node:path";
import { getDefaultEnvironment, type StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Absolute path of `command`: as a path (relative to cwd) when it has a slash, else the first hit in `dirs`. */
export function findExecutable(command: string, dirs: readonly string[], cwd: string): string | null {
  if (command.includes("/")) {
    const file = path.resolve(cwd, command);
    return executable(file) ? file : null;
  }
  for (const dir of dirs) {
    if (!dir) continue;
    const file = path.join(dir, command);
    if (executable(file)) return file;
  }
  return null;
}

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

export function prepareStdioLaunch(
  spec: { command: string; args: readonly string[]; env: Record<string, string>; cwd?: string },
  repoRoot: string,
): LaunchResult {
  const cwd = path.resolve(repoRoot, spec.cwd ?? ".");
  if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) return { ok: false, error: `cwd ${cwd} is not a directory` };
  // The SDK adds PATH, HOME and a few basics (getDefaultEnvironment) under the config's env; look the
  // command up on the PATH the child will have.
  const childPath = spec.env.PATH ?? getDefaultEnvironment().PATH ?? "";
  const binDir = path.join(repoRoot, "node_modules/.bin");
  const resolved = findExecutable(spec.command, [binDir, ...childPath.split(path.delimiter)], cwd);
  if (!resolved) {
    return { ok: false, error: `spawn ${spec.command} ENOENT (not an executable in ${binDir} or on PATH)` };
  }
  const wrapper = setsid();
  return {
    ok: true,
    launch: {
      ownGroup: wrapper !== null,
      params: {
        command: wrapper ?? resolved,
        args: wrapper ? [resolved, ...spec.args] : [...spec.args],
        env: spec.env,
        cwd,
        // Piped, so failures can quote it (stderr-tail.ts) and it never mixes into the runner's own output.
        stderr: "pipe",
      },
    },
  };
}
