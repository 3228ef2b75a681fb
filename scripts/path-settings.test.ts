/**
 * Every path setting of .env.example, read by the web server's and the runner's env modules from another
 * cwd than the repository (the engine's folder, where the runner spawns the engine): each names the
 * repository's folder (contracts/repo-path.ts). The engine's side: gpu-runner/engine/tests/test_settings.py;
 * the whole start: scripts/first-start.servertest.ts.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadEnv as loadRunnerEnv } from "../gpu-runner/src/env";
import { loadEnv as loadServerEnv } from "../server/env";

const ROOT = path.resolve(import.meta.dirname, "..");
const asEnv = (vars: Record<string, string>) => vars as NodeJS.ProcessEnv;
const cwd = process.cwd();
afterEach(() => process.chdir(cwd));

/** .env.example's assignments, the commented examples too (a user uncomments them). */
function exampleSettings(): Record<string, string> {
  const text = fs.readFileSync(path.join(ROOT, ".env.example"), "utf8");
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/^(?:# )?([A-Z][A-Z0-9_]*)=(\S*)$/gm)) out[m[1]!] ??= m[2]!;
  return out;
}

describe(".env.example's path settings", () => {
  it("resolve from the repository, whatever the cwd", () => {
    const example = exampleSettings();
    expect(example).toMatchObject({ DATA_DIR: ".data", ROLLBOOK_RUNS_DIR: "runs", ENGINE_PYTHON: "gpu-runner/engine/.venv/bin/python" });
    process.chdir(path.join(ROOT, "gpu-runner/engine"));
    // The settings that name other things (a URL to an engine run elsewhere, a shared folder) left out.
    const { ENGINE_URL: _url, ROLLBOOK_SHARED_CHECKPOINT_DIR: _shared, MCP_STDIO_READ_PATHS: _read, ...vars } = example;
    const runner = loadRunnerEnv(asEnv({ ...vars, RUNNER_TOKEN: "a".repeat(64), ROLLBOOK_SHARED_CHECKPOINT_DIR: "shared" }));
    expect(runner.ENGINE_PYTHON).toBe(path.join(ROOT, "gpu-runner/engine/.venv/bin/python"));
    expect(runner.ROLLBOOK_RUNS_DIR).toBe(path.join(ROOT, "runs"));
    expect(runner.ROLLBOOK_SHARED_CHECKPOINT_DIR).toBe(path.join(ROOT, "shared"));
    expect(loadServerEnv(asEnv(vars)).DATA_DIR).toBe(path.join(ROOT, ".data"));
  });
});
