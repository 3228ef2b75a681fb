/**
 * CPU fair share with the kernel's own tool: cgroups. One runner process keeps one tree under its cgroup:
 *
 *   <base>/rollbook-<pid>-<start>/      the runner's instance: weighs as much as one busy process per CPU
 *     service/                          the engine: SERVICE_WEIGHT × the sandboxes' weight
 *     sandboxes/
 *       other/                          idle sandbox processes, and checks outside any run
 *       ws-<workspace>/                 one per workspace with a rollout computing, equal weights
 *         run-<run>/                    one per run inside it, equal weights: its rollouts' processes
 *
 * so a workspace's twelve busy rollouts share one workspace's part of the CPUs, and another workspace keeps
 * its own. CFS gives each group its weight's share only while it wants the CPU: an idle group's part goes
 * to the busy ones. A run's group is made when its first process is placed and removed when its last one
 * leaves (a run that ended has none), a workspace's with its last run; what a killed runner left behind is
 * removed at the next start (its pid no longer runs with the same start time). Every name in a path comes
 * from cgroup-names.ts. cgroup v2 weighs with cpu.weight (and needs the cpu controller enabled down the
 * tree, and no process in a folder whose children it weighs); v1 with cpu.shares.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { CgroupTarget } from "./cgroup-detect";
import { groupPath, instanceGroup, parseInstanceGroup, runGroup, workspaceGroup } from "./cgroup-names";
import { startTicks } from "./proc";
import { SERVICE_WEIGHT, Unshared, type CpuShareMode, type SandboxPlacement } from "./share";

const UNIT = { 1: 1024, 2: 100 } as const;
const WEIGHT_FILE = { 1: "cpu.shares", 2: "cpu.weight" } as const;
const MAX_WEIGHT = { 1: 262_144, 2: 10_000 } as const;
/**
 * The instance's weight, in units of one process: where other processes share the runner's cgroup (a
 * shared machine, cgroup v1's root), each of their threads weighs one unit; the runner's whole tree weighing
 * one would leave all its rollouts and its engine the share of a single thread. One per CPU is what the
 * runner's processes got before they were grouped, when it had a busy one per CPU.
 */
const INSTANCE_WEIGHT = Math.max(1, os.availableParallelism());
/** How long close() waits for killed sandbox processes to leave their groups. */
const CLOSE_WAIT_MS = 3_000;

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

export interface CgroupShareOptions {
  /** This runner's process (default process.pid). */
  pid?: number;
  procRoot?: string;
  log?: (line: string) => void;
}

export class CgroupShare extends Unshared {
  override readonly mode: CpuShareMode;
  readonly instance: string;
  readonly sandboxes: string;
  readonly service: string;
  readonly other: string;
  private readonly version: 1 | 2;
  private readonly pid: number;
  private readonly procRoot: string;
  private readonly log: (line: string) => void;
  /** Where each placed process is (a run's group). */
  private readonly placed = new Map<number, string>();
  /** The processes in each run's group. */
  private readonly members = new Map<string, Set<number>>();
  /** Groups the runner has emptied that the kernel did not let go yet (a process still exiting). */
  private readonly pending = new Set<string>();
  private readonly warned = new Set<string>();
  private movedSelf = false;

  constructor(target: CgroupTarget, options: CgroupShareOptions = {}) {
    const pid = options.pid ?? process.pid;
    const procRoot = options.procRoot ?? "/proc";
    const instance = groupPath(target.base, instanceGroup(pid, startTicks(pid, procRoot) ?? 0));
    super(
      `CPU fair share: cgroup v${target.version} (${WEIGHT_FILE[target.version]}) under ${instance}: one group per workspace, one per run inside it, ` +
        `equal weights; the engine's group weighs ${SERVICE_WEIGHT}× all sandboxes'`,
    );
    this.version = target.version;
    this.mode = target.version === 2 ? "cgroup-v2" : "cgroup-v1";
    this.pid = pid;
    this.procRoot = procRoot;
    this.log = options.log ?? ((line) => process.stderr.write(`runner: ${line}\n`));
    this.instance = instance;
    this.service = groupPath(instance, "service");
    this.sandboxes = groupPath(instance, "sandboxes");
    this.other = groupPath(this.sandboxes, "other");
  }

  /** Makes the tree (after removing what dead runners left); throws with the kernel's reason where it refuses. */
  init(): void {
    const base = path.dirname(this.instance);
    const stale = this.removeStale(base);
    if (stale.length > 0) this.log(`CPU fair share: removed ${stale.length} group${stale.length === 1 ? "" : "s"} a previous runner left: ${stale.join(", ")}`);
    this.mkdir(this.instance);
    this.mkdir(this.service);
    if (this.version === 2) {
      try {
        this.enable(base);
      } catch (err) {
        // v2 weighs children only of a folder with no process of its own: the runner leaves it for service/.
        if (code(err) !== "EBUSY") throw err;
        fs.writeFileSync(path.join(this.service, "cgroup.procs"), String(this.pid));
        this.movedSelf = true;
        this.enable(base);
      }
      this.enable(this.instance);
    }
    this.mkdir(this.sandboxes);
    this.writeWeight(this.instance, INSTANCE_WEIGHT);
    this.writeWeight(this.service, SERVICE_WEIGHT);
    this.writeWeight(this.sandboxes, 1);
    if (this.version === 2) this.enable(this.sandboxes);
    this.mkdir(this.other);
  }

  /** The group a placement's processes compute in. */
  runDir(placement: SandboxPlacement): string {
    return groupPath(this.sandboxes, workspaceGroup(placement.workspaceId), runGroup(placement.workspaceId, placement.runId));
  }

  override assign(pid: number, placement: SandboxPlacement | undefined): void {
    const target = placement ? this.runDir(placement) : this.other;
    const from = this.placed.get(pid);
    if (from === target) return;
    if (placement) {
      const ws = path.dirname(target);
      this.mkdir(ws);
      if (this.version === 2) this.enable(ws);
      this.mkdir(target);
    }
    this.move(target, pid);
    this.untrack(pid);
    if (placement) {
      this.placed.set(pid, target);
      let set = this.members.get(target);
      if (!set) this.members.set(target, (set = new Set()));
      set.add(pid);
    }
  }

  override release(pid: number): void {
    this.assign(pid, undefined);
  }

  override forget(pid: number): void {
    this.untrack(pid);
  }

  override placeService(pid: number): void {
    super.placeService(pid);
    this.move(this.service, pid);
  }

  /** The group process `pid` is in, as this share placed it (null: idle or a check outside any run). */
  placeOf(pid: number): string | null {
    return this.placed.get(pid) ?? null;
  }

  override async close(): Promise<void> {
    const until = performance.now() + CLOSE_WAIT_MS;
    // Killed sandbox processes leave their groups as they exit: retry until the tree is gone or time is up.
    for (;;) {
      const left = this.removeTree(this.instance);
      if (left.length === 0) break;
      // A runner that moved itself into service/ (cgroup v2) stays there until it exits; the next start removes it.
      if (this.movedSelf && left.every((dir) => dir === this.service || dir === this.instance)) break;
      if (performance.now() > until) {
        this.log(`CPU fair share: left ${left.length} group${left.length === 1 ? "" : "s"} still holding processes (removed at the next start): ${left.join(", ")}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    this.placed.clear();
    this.members.clear();
    this.pending.clear();
  }

  private untrack(pid: number): void {
    const from = this.placed.get(pid);
    if (from === undefined) return;
    this.placed.delete(pid);
    const set = this.members.get(from);
    set?.delete(pid);
    if (set && set.size === 0) {
      this.members.delete(from);
      this.pending.add(from);
      this.pending.add(path.dirname(from));
    }
    this.prune();
  }

  /** Removes emptied groups, runs before their workspaces; a workspace with a run still placed stays. */
  private prune(): void {
    const inUse = new Set([...this.members.keys()].flatMap((run) => [run, path.dirname(run)]));
    for (const dir of [...this.pending].sort((a, b) => b.length - a.length)) {
      if (inUse.has(dir)) {
        this.pending.delete(dir);
        continue;
      }
      try {
        fs.rmdirSync(dir);
        this.pending.delete(dir);
      } catch (err) {
        if (code(err) === "ENOENT") this.pending.delete(dir);
        else if (code(err) !== "EBUSY" && code(err) !== "ENOTEMPTY") this.warnOnce(`rmdir: ${code(err)}`, `CPU fair share: could not remove ${dir}: ${(err as Error).message}`);
        // EBUSY: a process is still leaving it; the next change (or close) tries again.
      }
    }
  }

  private move(dir: string, pid: number): void {
    try {
      fs.writeFileSync(path.join(dir, "cgroup.procs"), String(pid));
    } catch (err) {
      if (code(err) === "ESRCH") return; // it exited meanwhile
      this.warnOnce(`move: ${code(err)}`, `CPU fair share: could not move process ${pid} into ${dir}: ${(err as Error).message}`);
    }
  }

  private mkdir(dir: string): void {
    try {
      fs.mkdirSync(dir);
    } catch (err) {
      if (code(err) !== "EEXIST") throw err;
    }
  }

  private enable(dir: string): void {
    const control = path.join(dir, "cgroup.subtree_control");
    if (fs.readFileSync(control, "utf8").split(/\s+/).includes("cpu")) return;
    fs.writeFileSync(control, "+cpu");
  }

  private writeWeight(dir: string, factor: number): void {
    fs.writeFileSync(path.join(dir, WEIGHT_FILE[this.version]), String(Math.min(MAX_WEIGHT[this.version], UNIT[this.version] * factor)));
  }

  /** Instance groups under `base` whose runner is gone, removed; their names. Our own earlier tree is emptied too. */
  private removeStale(base: string): string[] {
    const removed: string[] = [];
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(base, { withFileTypes: true });
    } catch {
      return removed;
    }
    for (const entry of entries) {
      const owner = entry.isDirectory() ? parseInstanceGroup(entry.name) : null;
      if (!owner) continue;
      const dir = path.join(base, entry.name);
      const ours = dir === this.instance;
      if (!ours && startTicks(owner.pid, this.procRoot) === owner.startTicks) continue; // a live runner's
      const left = this.removeTree(dir);
      if (!ours && left.length === 0) removed.push(entry.name);
      else if (!ours) this.log(`CPU fair share: ${dir} of a runner that is gone still holds processes: left in place`);
    }
    return removed;
  }

  /** rmdir `dir` and every group below it, deepest first; the groups that could not go (processes in them). */
  private removeTree(dir: string): string[] {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      return code(err) === "ENOENT" ? [] : [dir];
    }
    const left = entries.filter((e) => e.isDirectory()).flatMap((e) => this.removeTree(path.join(dir, e.name)));
    try {
      fs.rmdirSync(dir);
    } catch (err) {
      if (code(err) !== "ENOENT") left.push(dir);
    }
    return left;
  }

  private warnOnce(key: string, line: string): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.log(line);
  }
}
