/**
 * The sandbox every stdio MCP server runs in: bubblewrap (`bwrap`, Debian's `bubblewrap` package), the
 * unprivileged sandbox Flatpak is built on. Why bubblewrap and not nsjail, firejail or a plain setuid:
 * it is in Debian's main archive and small (one setuid-free binary that uses user namespaces), it builds the
 * sandbox's filesystem from nothing but what we bind in (a deny-by-default view, not a blocklist of paths to
 * hide), and it needs no daemon or config file. nsjail is not packaged for Debian 12; firejail is a
 * setuid-root binary with a large attack surface and profiles that allow by default; dropping to `nobody`
 * alone would still let the server read every world-readable file, the runner's included.
 *
 * What a server sees (docs/security.md, "stdio MCP servers"):
 *   - read-only: the system's /usr (and the /bin, /lib… links into it), a few files of /etc that programs
 *     need to run (passwd, hosts, resolv.conf, TLS roots), the runner's node_modules (npm-installed servers),
 *     Node's own folder, and whatever the runner's operator lists in MCP_STDIO_READ_PATHS;
 *   - writable: a private, empty /tmp (its HOME and working directory), gone when it exits;
 *   - never: the repository, the runner's data dir and tokens, the runs folder, other runs' files, the
 *     host's /tmp, the runner's environment (the server gets PATH, HOME and its definition's env only),
 *     other processes (own pid namespace), the network (own empty network namespace) unless its definition
 *     asks for it AND the operator allows it (MCP_STDIO_NETWORK);
 *   - as uid/gid 65534 (nobody) with no capabilities, in a new session (no terminal injection), killed
 *     with its whole namespace when bwrap, its parent, goes.
 *
 * bwrap's own process starts with an empty environment too: the MCP SDK's StdioClientTransport spawns with its
 * getDefaultEnvironment() (HOME, LOGNAME, PATH, SHELL, TERM, USER) merged over whatever env it is given, and
 * bwrap's --clearenv only clears what its child gets, so bwrap (pid 1 inside, its /proc/1/environ readable
 * there) used to carry the runner's. The command line is therefore `env -i bwrap …`: coreutils' env drops
 * everything it was given and execs bwrap in place (same pid, so setsid and signals still reach it).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { findExecutable } from "./executable";

/** What the runner's operator decides about stdio servers (gpu-runner/src/env.ts). */
export interface StdioSandboxSettings {
  /** MCP_STDIO_NETWORK: servers whose definition asks for the network get it. Off by default. */
  allowNetwork: boolean;
  /** MCP_STDIO_READ_PATHS: more folders servers may read (e.g. where the operator installed Python servers). */
  readPaths: readonly string[];
  /** The runner's repository root: its node_modules is readable (the servers installed with npm). */
  repoRoot: string;
}

/** The uid and gid a server runs as inside its user namespace: `nobody`. */
export const SANDBOX_UID = 65534;
const SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin";

/** Files and folders of /etc a program needs to start, resolve names and speak TLS; nothing else of /etc. */
const ETC_ENTRIES = ["passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "ssl", "ca-certificates", "localtime", "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d"];

export type SandboxedLaunch =
  | { ok: true; command: string; args: string[]; env: Record<string, string> }
  | { ok: false; error: string };

const SYSTEM_BIN = ["/usr/bin", "/bin"];

let envPath: string | null | undefined;
/** coreutils' env, from the system's folders only (never the runner's PATH): what starts bwrap with nothing. */
function findEnv(): string | null {
  envPath ??= findExecutable("env", SYSTEM_BIN, "/");
  return envPath;
}

let bwrapPath: string | null | undefined;
/** bwrap on PATH (or in /usr/bin), once it has been seen to start a sandbox here; null when it cannot. */
export function findBwrap(): string | null {
  if (bwrapPath !== undefined) return bwrapPath;
  const found = findExecutable("bwrap", [...(process.env.PATH ?? "").split(path.delimiter), ...SYSTEM_BIN], "/");
  bwrapPath = found && findEnv() && bwrapWorks(found) ? found : null;
  return bwrapPath;
}

/** Some kernels or containers forbid user namespaces: bwrap is then installed but cannot sandbox anything. */
function bwrapWorks(bwrap: string): boolean {
  try {
    execFileSync(bwrap, [...baseArgs(false), "--", "/bin/true"], { stdio: "ignore", timeout: 10_000, env: {} as NodeJS.ProcessEnv });
    return true;
  } catch {
    return false;
  }
}

/** Bind `p` read-only at the same path; a symlink (merged /usr: /bin → usr/bin) is recreated as one. */
function bindReadOnly(p: string): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(p);
  } catch {
    return [];
  }
  if (stat.isSymbolicLink()) return ["--symlink", fs.readlinkSync(p), p];
  return ["--ro-bind", p, p];
}

function baseArgs(network: boolean): string[] {
  return [
    "--unshare-all",
    ...(network ? ["--share-net"] : []),
    "--unshare-user",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    "--cap-drop",
    "ALL",
    "--die-with-parent",
    "--new-session",
    "--hostname",
    "mcp-sandbox",
    ...["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"].flatMap(bindReadOnly),
    ...ETC_ENTRIES.flatMap((e) => bindReadOnly(path.join("/etc", e))),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--chdir",
    "/tmp",
    "--clearenv",
  ];
}

/** Folders bound read-only, each with the paths under which the command may be found. */
function readableRoots(settings: StdioSandboxSettings): string[] {
  const nodeModules = path.join(settings.repoRoot, "node_modules");
  const roots = new Set<string>(["/usr", "/bin", "/sbin", "/lib", "/lib64", path.dirname(process.execPath), nodeModules]);
  try {
    roots.add(fs.realpathSync(nodeModules)); // a linked node_modules (a git worktree) is read where it really is
  } catch {
    // no node_modules: nothing npm-installed to run
  }
  for (const p of settings.readPaths) roots.add(path.resolve(p));
  return [...roots];
}

const inside = (file: string, root: string) => file === root || file.startsWith(root.endsWith("/") ? root : `${root}/`);

/**
 * The bwrap command line that runs `command` (already resolved to an absolute path on the host) with `args`
 * and exactly `env` (plus PATH and HOME) in the sandbox. Refused, with the reason, when the command lies
 * outside what the sandbox can read, or asks for a network the operator does not allow.
 */
export function sandboxedLaunch(
  bwrap: string,
  launch: { command: string; args: readonly string[]; env: Readonly<Record<string, string>>; network: boolean },
  settings: StdioSandboxSettings,
): SandboxedLaunch {
  if (launch.network && !settings.allowNetwork) {
    return { ok: false, error: "its definition asks for the network, which this runner does not give stdio MCP servers (MCP_STDIO_NETWORK=false)" };
  }
  const roots = readableRoots(settings);
  // What the command really is (npm's .bin entries are links into the package) must be readable inside.
  let real: string;
  try {
    real = fs.realpathSync(launch.command);
  } catch {
    real = launch.command;
  }
  if (!roots.some((r) => inside(real, r)) || !roots.some((r) => inside(launch.command, r))) {
    return {
      ok: false,
      error: `${launch.command} lies outside what the sandbox can read (the system's /usr, node_modules; the runner's operator adds folders with MCP_STDIO_READ_PATHS)`,
    };
  }
  const binds = roots
    .filter((r) => !["/usr", "/bin", "/sbin", "/lib", "/lib64"].includes(r))
    .flatMap((r) => (fs.existsSync(r) ? ["--ro-bind", fs.realpathSync(r), r] : []));
  const cleanEnv = findEnv();
  if (!cleanEnv) return { ok: false, error: "env (coreutils) is missing from /usr/bin and /bin: bwrap cannot be started with an empty environment" };
  const env: Record<string, string> = { PATH: SANDBOX_PATH, HOME: "/tmp", ...launch.env };
  return {
    ok: true,
    // `env -i`: whatever environment the spawner adds (the SDK adds its defaults), bwrap starts with none
    // (file comment); --clearenv then --setenv give the server exactly `env`.
    command: cleanEnv,
    args: ["-i", bwrap, ...baseArgs(launch.network), ...binds, ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v]), "--", launch.command, ...launch.args],
    env: {},
  };
}
