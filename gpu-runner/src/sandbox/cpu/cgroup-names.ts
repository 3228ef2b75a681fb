/**
 * Names of the runner's CPU groups (cgroups), and the only way a path under the runner's cgroup is built.
 * Workspace and run ids are user-controlled data: they never reach a path as written. A group's name is a
 * prefix, a readable slug of the id (only [a-z0-9_-], at most 24 characters: no '.', '/', newline or NUL can
 * survive) and 12 hex digits of a SHA-256 of the id, so two ids that slug alike still get two groups.
 * Every name is checked against one grammar again as the path is joined, and the joined path must lie
 * under the base: a name that slipped past the encoder would be refused, not followed.
 */
import { createHash } from "node:crypto";
import path from "node:path";

/** What every group name the runner creates matches, whole. */
export const GROUP_NAME = /^(?:ws|run)-[a-z0-9_-]{0,24}-[0-9a-f]{12}$|^rollbook-\d{1,10}-\d{1,20}$|^(?:service|sandboxes|other)$/;
/** An instance's top group: rollbook-<pid>-<start time of that process, in clock ticks since boot>. */
const INSTANCE = /^rollbook-(\d{1,10})-(\d{1,20})$/;

const slug = (id: string) =>
  id
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "")
    .slice(0, 24);

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 12);

/** The group of a workspace: ws-<slug>-<hash>. */
export function workspaceGroup(workspaceId: string): string {
  return `ws-${slug(workspaceId)}-${digest(`ws\0${workspaceId}`)}`;
}

/** The group of a run inside its workspace's group: run-<slug>-<hash of workspace and run>. */
export function runGroup(workspaceId: string, runId: string): string {
  return `run-${slug(runId)}-${digest(`run\0${workspaceId}\0${runId}`)}`;
}

/** The top group of one runner process (pid and start time tell a live owner from a reused pid). */
export function instanceGroup(pid: number, startTicks: number): string {
  if (!Number.isSafeInteger(pid) || pid <= 0 || !Number.isSafeInteger(startTicks) || startTicks < 0) {
    throw new Error(`instanceGroup: pid ${pid} and start time ${startTicks} must be non-negative integers`);
  }
  return `rollbook-${pid}-${startTicks}`;
}

/** pid and start time of an instance group's name; null for any other name. */
export function parseInstanceGroup(name: string): { pid: number; startTicks: number } | null {
  const m = INSTANCE.exec(name);
  return m ? { pid: Number(m[1]), startTicks: Number(m[2]) } : null;
}

/** `base`/`names…`, each name checked against GROUP_NAME and the result checked to be under `base`. */
export function groupPath(base: string, ...names: string[]): string {
  for (const name of names) {
    if (!GROUP_NAME.test(name)) throw new Error(`cgroup name ${JSON.stringify(name)} is not one the runner makes`);
  }
  const root = path.resolve(base);
  const joined = path.resolve(root, ...names);
  if (joined !== root && !joined.startsWith(root + path.sep)) throw new Error(`cgroup path ${JSON.stringify(joined)} is outside ${root}`);
  return joined;
}
