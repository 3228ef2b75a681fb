/**
 * The README's first start, as a new user does it (issue 31): a fresh checkout, `cp .env.example .env`, and
 * `npm start`. The checkout is a copy of this one's files in a temp folder (its node_modules linked, the
 * engine's venv and model taken from the user cache as setup does); .env is .env.example with only its
 * ports changed (so it does not clash with an instance on this machine) and its commented path examples
 * (ENGINE_PYTHON, ROLLBOOK_MODEL_CACHE) switched on, since a user may uncomment them. It runs scripts/lib.sh's
 * setup_all and start_runner, the first half of scripts/start.sh (the web build, minutes on 2 cores, is left
 * out), with its output redirected to a file, and waits for the runner's "engine ready". Then: every path
 * setting named the checkout's folders (nothing under gpu-runner/engine, where the engine runs), and the log
 * is plain text (no colour codes when not on a terminal).
 *
 * It fails on an ENGINE_PYTHON resolved from the engine's folder: the engine cannot be spawned and the runner
 * logs "restarting the engine" instead of "engine ready".
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const READY_MS = 300_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** This checkout's files (tracked and new, not ignored) copied to `dest`: what a clone of it would hold. */
function copyCheckout(dest: string): void {
  const files = execFileSync("git", ["-C", ROOT, "ls-files", "-co", "--exclude-standard", "-z"], { encoding: "utf8" }).split("\0").filter(Boolean);
  for (const f of files) {
    const from = path.join(ROOT, f);
    if (!fs.existsSync(from)) continue; // deleted in the work tree, not yet in the index
    fs.mkdirSync(path.dirname(path.join(dest, f)), { recursive: true });
    fs.cpSync(from, path.join(dest, f), { verbatimSymlinks: true });
  }
  // What `npm start` would install or generate the same: linked or copied instead of made again (minutes).
  // Linked, node_modules must already be this lockfile's: else setup in the copy would npm-install into it.
  const lockHash = createHash("sha256").update(fs.readFileSync(path.join(ROOT, "package-lock.json"))).digest("hex").slice(0, 16);
  const stamp = fs.readFileSync(path.join(ROOT, "node_modules", ".rollbook-stamp"), "utf8").trim();
  if (stamp !== lockHash) throw new Error("node_modules was not installed from this package-lock.json: run `npm run setup` first");
  fs.symlinkSync(fs.realpathSync(path.join(ROOT, "node_modules")), path.join(dest, "node_modules"));
  fs.cpSync(path.join(ROOT, "generated"), path.join(dest, "generated"), { recursive: true });
}

/** .env.example with other ports and its commented path examples on; every other line as it is. */
function envFromExample(example: string, ports: { web: number; runner: number; engine: number }): string {
  return example
    .replace(/^PORT=3000$/m, `PORT=${ports.web}`)
    .replace(/^RUNNER_PORT=4100$/m, `RUNNER_PORT=${ports.runner}`)
    .replace(/^RUNNER_URL=http:\/\/127\.0\.0\.1:4100$/m, `RUNNER_URL=http://127.0.0.1:${ports.runner}`)
    .replace(/^ENGINE_PORT=8100$/m, `ENGINE_PORT=${ports.engine}`)
    .replace(/^# (ENGINE_PYTHON=\S+)$/m, "$1")
    .replace(/^# (ROLLBOOK_MODEL_CACHE=\S+)$/m, "$1");
}

describe("cp .env.example .env && npm start, in a fresh checkout", () => {
  let dir = "";
  let checkout = "";
  let logFile = "";
  let proc: ChildProcess | null = null;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rollbook-first-start-"));
    checkout = path.join(dir, "rollbook");
    logFile = path.join(dir, "start.log");
    copyCheckout(checkout);
    const ports = { web: await freePort(), runner: await freePort(), engine: await freePort() };
    const example = fs.readFileSync(path.join(checkout, ".env.example"), "utf8");
    const dotenv = envFromExample(example, ports);
    // The substitutions this test relies on all happened (a changed .env.example must not make it vacuous).
    for (const line of [`PORT=${ports.web}`, `RUNNER_PORT=${ports.runner}`, `ENGINE_PORT=${ports.engine}`, "ENGINE_PYTHON=", "DATA_DIR=.data", "ROLLBOOK_RUNS_DIR=runs"]) {
      expect(dotenv).toMatch(new RegExp(`^${line}`, "m"));
    }
    fs.writeFileSync(path.join(checkout, ".env"), dotenv);
    // A new user's shell: no test settings (DATABASE_URL, tokens, runs folders) leak in. Started from
    // another folder than the checkout, as `npm start --prefix` or a service manager would.
    const keep = ["PATH", "HOME", "USER", "LANG", "TMPDIR", "XDG_CACHE_HOME"];
    const env = Object.fromEntries(keep.flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : []))) as NodeJS.ProcessEnv;
    const out = fs.openSync(logFile, "w");
    proc = spawn("bash", ["-c", 'source "$1/scripts/lib.sh"; setup_all; start_runner; wait "$RUNNER_PID"', "first-start", checkout], {
      cwd: os.tmpdir(),
      env,
      stdio: ["ignore", out, out],
    });
    fs.closeSync(out);
  }, 60_000);

  afterAll(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((resolve) => proc!.once("exit", resolve));
      proc.kill("SIGTERM"); // start_runner's trap stops the runner, which stops its engine
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  const log = () => fs.readFileSync(logFile, "utf8");

  it("reaches the runner's 'engine ready', with every path setting from the checkout's root", async () => {
    const t0 = Date.now();
    for (;;) {
      const text = log();
      if (/^runner: engine ready/m.test(text)) break;
      // A wrong ENGINE_PYTHON: spawn ENOENT, restarted forever. Fail at the first restart with its reason.
      const broken = /restarting the engine: .*|runner: the engine is not ready.*|Invalid runner environment[\s\S]*/.exec(text);
      if (broken) throw new Error(`the engine did not start: ${broken[0]}\n--- start log ---\n${text.slice(-4000)}`);
      if (proc?.exitCode !== null) throw new Error(`the start exited (${proc?.exitCode}):\n${text.slice(-4000)}`);
      if (Date.now() - t0 > READY_MS) throw new Error(`no "engine ready" within ${READY_MS} ms:\n${text.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    // DATA_DIR=.data and ROLLBOOK_RUNS_DIR=runs are the checkout's, not the engine's folder's.
    expect(fs.existsSync(path.join(checkout, ".data", "runner-token"))).toBe(true);
    for (const stray of ["gpu-runner/engine/.data", "gpu-runner/engine/runs", "gpu-runner/engine/gpu-runner"]) {
      expect(fs.existsSync(path.join(checkout, stray)), stray).toBe(false);
    }
  }, READY_MS + 30_000);

  it("writes a start log without colour codes or progress bars when redirected", () => {
    const text = log();
    expect(text).toMatch(/\[rollbook\] starting the runner/);
    expect(text).not.toContain("\u001b");
    expect(text).not.toContain("\r");
  });
});
