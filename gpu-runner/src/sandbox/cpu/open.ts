/**
 * The runner process's one CPU share (sandbox processes are one pool per process, pool.ts, so their share is
 * per process too): opened by the first runner server in the process, closed by the last. RUNNER_CPU_SHARE
 * picks the mode: `auto` (cgroups where the runner may make them, else the nice fallback, saying why),
 * `cgroup` (refuse to start without them), `nice`, or `off`. The mode is logged once, when it is chosen.
 */
import { detectCgroup } from "./cgroup-detect";
import { CgroupShare } from "./cgroup-share";
import { NiceShare } from "./nice-share";
import { canLowerNice } from "./proc";
import { Unshared, type CpuShare } from "./share";

export type CpuShareSetting = "auto" | "cgroup" | "nice" | "off";

/** Before any runner opened one (unit tests driving the pool directly): nothing is placed. */
const NONE = new Unshared("CPU fair share: none (no runner server in this process)");

let current: CpuShare = NONE;
let users = 0;

/** The share sandbox processes are placed by now. */
export function cpuShare(): CpuShare {
  return current;
}

export function openCpuShare(setting: { mode: CpuShareSetting; cgroup?: string }, log: (line: string) => void = (l) => process.stderr.write(`runner: ${l}\n`)): CpuShare {
  if (users++ > 0) return current;
  try {
    current = choose(setting, log);
  } catch (err) {
    users--;
    throw err;
  }
  log(current.description);
  return current;
}

export async function closeCpuShare(): Promise<void> {
  if (users === 0 || --users > 0) return;
  const closing = current;
  current = NONE;
  await closing.close();
}

function choose(setting: { mode: CpuShareSetting; cgroup?: string }, log: (line: string) => void): CpuShare {
  if (setting.mode === "off") return new Unshared();
  if (setting.mode === "nice") return new NiceShare("RUNNER_CPU_SHARE=nice", { canLower: canLowerNice() });
  const found = detectCgroup({ base: setting.cgroup });
  let reason: string;
  if (found.ok) {
    const share = new CgroupShare(found.target, { log });
    try {
      share.init();
      return share;
    } catch (err) {
      reason = `${found.target.base}: ${(err as Error).message}`;
      void share.close();
    }
  } else reason = found.reason;
  if (setting.mode === "cgroup") throw new Error(`RUNNER_CPU_SHARE=cgroup, but the runner cannot make CPU groups: ${reason}`);
  return new NiceShare(reason, { canLower: canLowerNice() });
}
