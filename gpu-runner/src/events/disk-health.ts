/**
 * Whether this runner can write to its runs folder. Once a write failed (a full disk), the runner says why
 * (RunnerStatus.disk_error), refuses new runs, and tries a test write every `retryMs` (and at every start)
 * until one succeeds: then whatever waited for the disk (runs whose run.finished could not be written) is
 * written and new runs are taken again.
 *
 * The test write is PROBE_BYTES, written whole, fdatasync'ed and removed: a disk that only has room for a
 * few more log lines (a full disk leaves slack in the last block of each file) has no room for a run, whose
 * checkpoints are megabytes.
 */
import fs from "node:fs";
import path from "node:path";

export const PROBE_BYTES = 1024 * 1024;

/** Writes PROBE_BYTES to a scratch file in `dir`, syncs and removes it; throws what the disk said. */
export function probeWrite(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `.write-probe-${process.pid}`);
  const chunk = Buffer.alloc(64 * 1024, 0x2e);
  let fd: number | null = null;
  try {
    fd = fs.openSync(file, "w");
    for (let written = 0; written < PROBE_BYTES; ) {
      const n = fs.writeSync(fd, chunk, 0, Math.min(chunk.length, PROBE_BYTES - written));
      if (n <= 0) throw Object.assign(new Error("write(2) wrote nothing"), { code: "EIO" });
      written += n;
    }
    fs.fdatasyncSync(fd);
  } finally {
    if (fd !== null) fs.closeSync(fd);
    fs.rmSync(file, { force: true });
  }
}

export class DiskHealth {
  private reason: string | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly dir: string,
    /** Called once a test write succeeded, before the failure is cleared; returns false if what it wrote failed. */
    private readonly onWritable: () => boolean,
    private readonly retryMs = 2_000,
  ) {}

  /** Why this runner cannot write now ("disk full on runner gpu-1: …"), or null. */
  get error(): string | null {
    return this.reason;
  }

  /** A write failed: remember why (the first reason until it recovers) and start retrying. */
  fail(reason: string): void {
    this.reason ??= reason;
    if (!this.timer) {
      this.timer = setInterval(() => void this.retry(), this.retryMs);
      this.timer.unref();
    }
  }

  /** Try a test write now; true when the disk takes writes again (or never failed). */
  retry(): boolean {
    if (this.reason === null) return true;
    try {
      probeWrite(this.dir);
    } catch {
      return false;
    }
    if (!this.onWritable()) return false;
    this.reason = null;
    this.stop();
    return true;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
