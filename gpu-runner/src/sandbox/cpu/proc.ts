/**
 * What the kernel says about a process, read from /proc (Linux): the CPU its threads got and the time they
 * were runnable but waited for a CPU (schedstat), its threads, and its start time. Each reader returns null
 * where /proc has no answer (another OS, a process gone, a kernel without schedstat): callers treat that
 * as "not measured", never as zero.
 */
import fs from "node:fs";
import path from "node:path";

export interface SchedUse {
  /** CPU time the threads ran, ns. */
  cpuNs: number;
  /** Time the threads were runnable but waited on a run queue (or their group was throttled), ns, summed. */
  waitNs: number;
  /** Each thread's wait, ns, by thread id. */
  threadWaitNs: Map<number, number>;
}

/** The thread ids of a process (/proc/<pid>/task); [] when it is gone. */
export function threadIds(pid: number, procRoot = "/proc"): number[] {
  try {
    return fs.readdirSync(path.join(procRoot, String(pid), "task")).map(Number).filter(Number.isSafeInteger);
  } catch {
    return [];
  }
}

/**
 * The sum over a process's live threads of /proc/<pid>/task/<tid>/schedstat (run time, run-queue wait).
 * A thread that ended took its figures with it: the sum covers the threads alive now (a sandbox process's
 * isolate and V8 threads live as long as the process).
 */
export function schedUse(pid: number, procRoot = "/proc"): SchedUse | null {
  const tids = threadIds(pid, procRoot);
  if (tids.length === 0) return null;
  let cpuNs = 0;
  let waitNs = 0;
  const threadWaitNs = new Map<number, number>();
  for (const tid of tids) {
    let text: string;
    try {
      text = fs.readFileSync(path.join(procRoot, String(pid), "task", String(tid), "schedstat"), "utf8");
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const [run, wait] = text.trim().split(/\s+/).map(Number);
    if (!Number.isFinite(run) || !Number.isFinite(wait)) continue;
    cpuNs += run as number;
    waitNs += wait as number;
    threadWaitNs.set(tid, wait as number);
  }
  return threadWaitNs.size > 0 ? { cpuNs, waitNs, threadWaitNs } : null;
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot; null when it is gone. */
export function startTicks(pid: number, procRoot = "/proc"): number | null {
  try {
    const stat = fs.readFileSync(path.join(procRoot, String(pid), "stat"), "utf8");
    // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isSafeInteger(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

/** Whether this process may lower a niceness (CAP_SYS_NICE in its effective capabilities; root has it). */
export function canLowerNice(procRoot = "/proc"): boolean {
  try {
    const status = fs.readFileSync(path.join(procRoot, "self", "status"), "utf8");
    const cap = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    return cap !== undefined && (BigInt(`0x${cap}`) & (1n << 23n)) !== 0n;
  } catch {
    return false;
  }
}
