/**
 * scripts/lib.sh's load_env, on a checkout whose .env is a copy of .env.example: a setting given in the
 * environment wins over .env's (`PORT=3001 npm start`, as the README says), .env's others are read, and its
 * path settings come out absolute from the checkout's root.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const SCRIPTS = import.meta.dirname;
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A checkout holding only lib.sh (and what it sources) and `.env` = .env.example; `vars` after load_env. */
function loaded(vars: string[], given: Record<string, string>): Record<string, string> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-load-env-"));
  dirs.push(root);
  fs.mkdirSync(path.join(root, "scripts"));
  for (const f of ["lib.sh", "isolated-vm-cache.sh"]) fs.copyFileSync(path.join(SCRIPTS, f), path.join(root, "scripts", f));
  fs.copyFileSync(path.join(SCRIPTS, "..", ".env.example"), path.join(root, ".env"));
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? os.tmpdir(), ...given } as Record<string, string> as NodeJS.ProcessEnv;
  const script = `source "${root}/scripts/lib.sh"; load_env; for v in ${vars.join(" ")}; do printf '%s=%s\\n' "$v" "\${!v:-}"; done`;
  const out = execFileSync("bash", ["-c", script], { env, encoding: "utf8", cwd: os.tmpdir() });
  return { ROOT: root, ...Object.fromEntries(out.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)])) };
}

describe("load_env", () => {
  it("lets the environment win over .env, reads the rest, and makes path settings absolute from the root", () => {
    const v = loaded(["PORT", "RUNNER_PORT", "DATA_DIR", "ROLLBOOK_RUNS_DIR"], { PORT: "3001" });
    expect(v.PORT).toBe("3001");
    expect(v.RUNNER_PORT).toBe("4100");
    expect(v.DATA_DIR).toBe(path.join(v.ROOT!, ".data"));
    expect(v.ROLLBOOK_RUNS_DIR).toBe(path.join(v.ROOT!, "runs"));
  });

  it("without the variable in the environment, .env's value holds", () => {
    expect(loaded(["PORT"], {}).PORT).toBe("3000");
  });
});
