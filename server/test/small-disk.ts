/**
 * A real small disk for full-disk tests: a tmpfs of `size` mounted on a fresh folder (needs root or
 * CAP_SYS_ADMIN, as this project's CI has). Where it cannot be mounted the test FAILS, saying why: a
 * full-disk test that passes without a full disk proves nothing.
 *
 *   fill()  writes a filler file until the disk says ENOSPC, then tops its last block up byte by byte; what
 *           is left is only the slack in the last block of the files already there
 *   leave(n) cuts the filler so that about n bytes are free again
 *   free()  removes the filler
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface SmallDisk {
  dir: string;
  fill(): void;
  leave(bytes: number): void;
  free(): void;
  /** Bytes free now (statfs). */
  available(): number;
  unmount(): void;
}

export function mountSmallDisk(size: string): SmallDisk {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-small-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size},mode=0755`, "tmpfs", dir], { stdio: "pipe" });
  } catch (err) {
    fs.rmdirSync(dir);
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message;
    throw new Error(`cannot mount a ${size} tmpfs at ${dir} for a full-disk test (it needs root or CAP_SYS_ADMIN; this project's CI runs as root): ${why}`);
  }
  const filler = path.join(dir, ".filler");
  const fill = () => {
    const fd = fs.openSync(filler, "a");
    try {
      for (const size of [1 << 20, 4096, 1]) {
        const chunk = Buffer.alloc(size);
        for (;;) {
          try {
            if (fs.writeSync(fd, chunk) < size) break;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
            break;
          }
        }
      }
    } finally {
      fs.closeSync(fd);
    }
  };
  return {
    dir,
    fill,
    leave: (bytes) => fs.truncateSync(filler, Math.max(0, fs.statSync(filler).size - bytes)),
    free: () => fs.rmSync(filler, { force: true }),
    available: () => {
      const s = fs.statfsSync(dir);
      return s.bavail * s.bsize;
    },
    unmount: () => {
      execFileSync("umount", ["-l", dir], { stdio: "pipe" });
      fs.rmdirSync(dir);
    },
  };
}
