/**
 * scripts/lib.sh's token step, as `npm start`/`npm run setup` run it: a RUNNER_TOKEN and an ENGINE_TOKEN
 * are generated once into DATA_DIR (mode 600) and the same ones come back on every later run; a token set
 * in the environment wins; with ENGINE_URL no engine token is made up.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const LIB = path.resolve(import.meta.dirname, "lib.sh");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function tokens(dataDir: string, extra: Record<string, string> = {}): { runner: string; engine: string } {
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? os.tmpdir(), DATA_DIR: dataDir, ...extra } as Record<string, string> as NodeJS.ProcessEnv;
  const out = execFileSync("bash", ["-c", `source "${LIB}"; ensure_tokens; printf '%s\\n%s' "$RUNNER_TOKEN" "\${ENGINE_TOKEN:-}"`], { env, encoding: "utf8" });
  const [runner = "", engine = ""] = out.split("\n");
  return { runner, engine };
}

describe("setup's generated tokens", () => {
  it("are made once, kept private, and the same on the next run", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-tokens-"));
    dirs.push(dir);
    const first = tokens(dir);
    expect(first.runner).toMatch(/^[0-9a-f]{64}$/);
    expect(first.engine).toMatch(/^[0-9a-f]{64}$/);
    expect(first.engine).not.toBe(first.runner);
    for (const f of ["runner-token", "engine-token"]) expect(fs.statSync(path.join(dir, f)).mode & 0o777).toBe(0o600);
    expect(tokens(dir)).toEqual(first);
    // Another install (another data directory) gets other tokens.
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-tokens-"));
    dirs.push(other);
    expect(tokens(other).runner).not.toBe(first.runner);
  });

  it("a token set in the environment wins, and ENGINE_URL gets no made-up engine token", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-tokens-"));
    dirs.push(dir);
    const set = "x".repeat(40);
    expect(tokens(dir, { RUNNER_TOKEN: set, ENGINE_URL: "http://gpu-box:8100" })).toEqual({ runner: set, engine: "" });
    expect(fs.existsSync(path.join(dir, "runner-token"))).toBe(false);
    expect(fs.existsSync(path.join(dir, "engine-token"))).toBe(false);
  });
});
