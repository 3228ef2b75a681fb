/**
 * The one root every path setting is read from: the repository's folder, whatever the process's cwd. A
 * `.env` copied from `.env.example` says `DATA_DIR=.data` and `ROLLBOOK_RUNS_DIR=runs`; the web server, the
 * runner and the engine each start in a folder of their own (the engine in gpu-runner/engine), so a path
 * resolved from the cwd named a different folder in each (issue 31: the engine's interpreter was looked for
 * under gpu-runner/engine and never started). The engine's settings.py and scripts/lib.sh resolve the same
 * way. `~/` is the home folder, as a shell would expand it in a .env it sources.
 */
import os from "node:os";
import path from "node:path";

/**
 * contracts/ → the repository. Where a bundler rewrote this module (Next's server chunks) import.meta.dirname
 * is unset: the cwd is the repository there (scripts/start.sh starts every process in it, and exports the
 * path settings absolute besides).
 */
export const REPO_ROOT = import.meta.dirname ? path.resolve(import.meta.dirname, "..") : process.cwd();

/** A path setting's value as an absolute path: `~/x` from the home folder, a relative one from the repository. */
export function repoPath(value: string, root: string = REPO_ROOT): string {
  if (value === "~" || value.startsWith("~/")) return path.join(os.homedir(), value.slice(1));
  return path.resolve(root, value);
}
