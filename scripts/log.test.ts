/**
 * scripts/lib.sh's start log is plain text when redirected (`npm start > start.log`): colour codes only on a
 * terminal, and never with NO_COLOR (no-color.org); pip's and npm's progress bars are off when redirected.
 */
import { execFileSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

const LIB = path.resolve(import.meta.dirname, "lib.sh");
const SCRIPT = `source "${LIB}"; log "hello"; step_start "a step" "detail"; step_done; echo "pip=$PIP_PROGRESS npm=$NPM_PROGRESS" >&2`;
const baseEnv = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? os.tmpdir() };
const asEnv = (vars: Record<string, string>) => vars as NodeJS.ProcessEnv;

/** The script's stderr, with stdout and stderr pipes (what a redirect gives it). */
const redirected = (env: Record<string, string> = {}) =>
  execFileSync("bash", ["-c", `(${SCRIPT}) 2>&1`], { env: asEnv({ ...baseEnv, ...env }), encoding: "utf8" });
/** The same on a pseudo-terminal (util-linux `script`), as in an interactive shell. */
const onTerminal = (env: Record<string, string> = {}) =>
  execFileSync("script", ["-qec", `bash -c '${SCRIPT.replace(/'/g, "'\\''")}'`, "/dev/null"], { env: asEnv({ ...baseEnv, TERM: "xterm", ...env }), encoding: "utf8" });

describe("the start log", () => {
  it("has no escape codes or progress bars when redirected", () => {
    const out = redirected();
    expect(out).toContain("[rollbook] hello");
    expect(out).toMatch(/\[rollbook\] a step \(detail\) …\n\[rollbook\] a step … done in \d+ s/);
    expect(out).not.toContain("\u001b");
    expect(out).toContain("pip=off npm=false");
  });

  it("is coloured on a terminal, unless NO_COLOR is set", () => {
    expect(onTerminal()).toContain("\u001b[1;34m[rollbook]\u001b[0m hello");
    const plain = onTerminal({ NO_COLOR: "1" });
    expect(plain).toContain("[rollbook] hello");
    expect(plain).not.toContain("\u001b");
  });
});
