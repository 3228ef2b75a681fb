/**
 * Where the runner can make CPU groups: the cgroup it runs in, on cgroup v2 when that hierarchy holds the
 * `cpu` controller (its `cpu.weight`), else on cgroup v1's `cpu` hierarchy (`cpu.shares`). Read from
 * /proc/self/mountinfo and /proc/self/cgroup, so a runner in a container or a systemd unit finds its own
 * cgroup, not the machine's root. An operator can name the cgroup instead (RUNNER_CGROUP: a cgroup delegated
 * to the runner's user). `root` prefixes every path read (tests lay out a tree; the runner passes "/").
 */
import fs from "node:fs";
import path from "node:path";

export interface CgroupTarget {
  version: 1 | 2;
  /** The cgroup the runner's groups go under (its own cgroup, or RUNNER_CGROUP). */
  base: string;
}

export type Detected = { ok: true; target: CgroupTarget } | { ok: false; reason: string };

interface Mount {
  /** The path inside the hierarchy that is mounted here (mountinfo's 4th field). */
  root: string;
  point: string;
  fstype: string;
  superOptions: string[];
}

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

export function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const l = left.split(" ");
    const r = right.split(" ");
    if (l.length < 5 || r.length < 3) continue;
    mounts.push({ root: unescape(l[3]!), point: unescape(l[4]!), fstype: r[0]!, superOptions: r[2]!.split(",") });
  }
  return mounts;
}

/** /proc/self/cgroup: hierarchy id, controllers, path. */
export function parseProcCgroup(text: string): { id: string; controllers: string[]; path: string }[] {
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [id = "", controllers = "", ...rest] = line.split(":");
      return { id, controllers: controllers ? controllers.split(",") : [], path: rest.join(":") };
    });
}

const read = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return null;
  }
};

const writable = (dir: string) => {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
};

/** `selfPath` of the process, as a folder under the mount (null if it lies outside what is mounted). */
function under(mount: Mount, selfPath: string, root: string): string | null {
  const rel = path.posix.relative(mount.root, selfPath);
  if (rel.startsWith("..")) return null;
  return path.join(root, mount.point, rel);
}

/** Why `dir` cannot hold the runner's groups on cgroup `version`, or null when it can. */
function problem(dir: string, version: 1 | 2): string | null {
  if (version === 2) {
    const controllers = read(path.join(dir, "cgroup.controllers"));
    if (controllers === null) return `${dir} is not a cgroup v2 folder`;
    if (!controllers.split(/\s+/).includes("cpu")) return `cgroup v2 at ${dir} has no cpu controller (cgroup.controllers: "${controllers.trim()}")`;
  } else if (read(path.join(dir, "cpu.shares")) === null) return `${dir} has no cpu.shares (not a cgroup v1 cpu folder)`;
  if (!writable(dir)) return `${dir} is not writable by this user (run the runner as root, or delegate a cgroup to its user and name it in RUNNER_CGROUP)`;
  return null;
}

export function detectCgroup(options: { root?: string; base?: string } = {}): Detected {
  const root = options.root ?? "/";
  if (options.base !== undefined) {
    const dir = path.join(root, options.base);
    const version = read(path.join(dir, "cgroup.controllers")) !== null ? 2 : 1;
    const why = problem(dir, version);
    return why ? { ok: false, reason: `RUNNER_CGROUP: ${why}` } : { ok: true, target: { version, base: dir } };
  }
  const mountinfo = read(path.join(root, "proc/self/mountinfo"));
  const selfCgroup = read(path.join(root, "proc/self/cgroup"));
  if (mountinfo === null || selfCgroup === null) return { ok: false, reason: "no /proc/self/mountinfo or /proc/self/cgroup (not Linux?)" };
  const mounts = parseMountinfo(mountinfo);
  const self = parseProcCgroup(selfCgroup);
  const reasons: string[] = [];

  const v2Path = self.find((c) => c.id === "0" && c.controllers.length === 0)?.path;
  for (const mount of mounts.filter((m) => m.fstype === "cgroup2")) {
    if (v2Path === undefined) break;
    const dir = under(mount, v2Path, root);
    if (dir === null) continue;
    const why = problem(dir, 2);
    if (!why) return { ok: true, target: { version: 2, base: dir } };
    reasons.push(why);
  }
  const v1Path = self.find((c) => c.controllers.includes("cpu"))?.path;
  for (const mount of mounts.filter((m) => m.fstype === "cgroup" && m.superOptions.includes("cpu"))) {
    if (v1Path === undefined) break;
    const dir = under(mount, v1Path, root);
    if (dir === null) continue;
    const why = problem(dir, 1);
    if (!why) return { ok: true, target: { version: 1, base: dir } };
    reasons.push(why);
  }
  if (reasons.length === 0) reasons.push("no cgroup hierarchy with the cpu controller is mounted");
  return { ok: false, reason: reasons.join("; ") };
}
