/**
 * The runner's one validated environment module: every setting the runner reads from the process
 * environment is parsed here once, with a default and a reason, so nothing else touches process.env.
 */
import path from "node:path";
import os from "node:os";
import { z } from "zod";
import { RUNNER_TOKEN_MISSING } from "../../contracts/tokens";
import { parseEnv } from "../../contracts/env";
import { identifierRule, isIdentifier } from "../../contracts/identifiers";
import { EgressAllowSetting } from "./net/egress-policy";
import { REPO_ROOT, repoPath } from "../../contracts/repo-path";

/** The repository root; every path setting below is resolved from it, whatever the cwd (contracts/repo-path.ts). */
export { REPO_ROOT };

const port = z.coerce.number().int().min(0).max(65535);

const BooleanSetting = (name: string, fallback: "true" | "false") =>
  z
    .enum(["true", "false", "1", "0", "on", "off", "yes", "no"], { error: `${name} is true or false` })
    .default(fallback)
    .transform((v) => ["true", "1", "on", "yes"].includes(v));

export const RunnerEnv = z.object({
  /** Port of the runner's tRPC HTTP server (0 = pick a free one; the chosen port is printed). */
  RUNNER_PORT: port.default(4100),
  /** Loopback by default: expose the runner deliberately (behind TLS) when the web tier is elsewhere. */
  RUNNER_HOST: z.string().min(1).default("127.0.0.1"),
  /**
   * Bearer token the web server must send on every call. No default: a fixed one would be the same on every
   * install. `npm start` generates one into DATA_DIR/runner-token and gives it to both processes.
   */
  RUNNER_TOKEN: z
    .string({ error: (issue) => (issue.input === undefined ? RUNNER_TOKEN_MISSING : undefined) })
    .min(8, "RUNNER_TOKEN must be at least 8 characters (32 random ones recommended)"),
  /** Port the spawned engine listens on (localhost only). */
  ENGINE_PORT: port.default(8100),
  /**
   * Python interpreter of the engine's virtual environment; a relative path is the repository's (`.env.example`
   * writes one; resolved from the engine's folder, where it is spawned, it named nothing and the engine never
   * started). Unset: the vLLM venv with ROLLBOOK_BACKEND=vllm (scripts/lib.sh ensure_vllm_venv), else the engine's.
   */
  ENGINE_PYTHON: z
    .string()
    .min(1)
    .transform((p) => repoPath(p))
    .optional(),
  /**
   * The engine's inference backend, read by the engine itself (it inherits the runner's environment): `vllm`
   * also makes the vLLM venv the default ENGINE_PYTHON. auto: vLLM with CUDA when importable, else transformers.
   */
  ROLLBOOK_BACKEND: z.enum(["auto", "transformers", "vllm"], { error: "ROLLBOOK_BACKEND is auto, transformers or vllm" }).default("auto"),
  /**
   * Base model the engine loads at start; also the name experiments write in config.json "model", so it must be
   * a name of the shared grammar (contracts/identifiers.json: no '@', no space): one the users can type.
   */
  ENGINE_MODEL: z
    .string()
    .refine((m) => isIdentifier("base_model", m), { message: `a model name is ${identifierRule("base_model")}` })
    .default("SmolLM2-135M-Instruct"),
  /** Use an engine that is already running (e.g. on another port or box) instead of spawning one. */
  ENGINE_URL: z
    .string()
    .url()
    .optional()
    .transform((u) => (u ? u.replace(/\/+$/, "") : undefined)),
  /**
   * Bearer token of the engine's routes (all but /health). Unset: the runner makes a random one for the
   * engine it spawns. Required with ENGINE_URL: it must be the token that engine was started with.
   */
  ENGINE_TOKEN: z.string().min(16, "ENGINE_TOKEN must be at least 16 characters (32 random ones recommended)").optional(),
  /**
   * How many runs this runner takes at once, reported in status() for the web server's dispatcher (which
   * never sends more). 2 by default: runs share one engine, whose batching serves concurrent runs together.
   */
  RUNNER_CAPACITY: z.coerce.number().int().min(1, "RUNNER_CAPACITY is a whole number, at least 1").max(1000).default(2),
  /**
   * Chat calls the runner keeps on the engine at once when the engine's /health does not report its batch
   * capacity (an external engine of another kind). More wait in the runner's fair queue (engine/fair-queue.ts).
   */
  ENGINE_BATCH_CAPACITY: z.coerce.number().int().min(1, "ENGINE_BATCH_CAPACITY is a whole number, at least 1").max(4096).default(32),
  /**
   * The largest request body (bytes) the runner reads into memory: tRPC calls (a run start carries the
   * experiment's files, up to 8 MB, JSON-escaped) and the chat pass-through (which has a tighter cap of its
   * own). Bigger bodies are 413, before more is read. Checkpoint uploads stream to disk under their own cap.
   */
  RUNNER_MAX_REQUEST_BYTES: z.coerce.number().int().min(65_536, "RUNNER_MAX_REQUEST_BYTES: a whole number of bytes, at least 65536").default(32 * 1024 * 1024),
  /**
   * Where run folders live: runs/<run>/events.jsonl here; the engine writes checkpoints beside them. Relative:
   * from the repository (the engine is given the absolute path: it runs in gpu-runner/engine).
   */
  ROLLBOOK_RUNS_DIR: z.string().min(1).default("runs").transform((p) => repoPath(p)),
  /**
   * A folder every runner of the pool mounts at the same path (NFS, a shared volume). Set: each checkpoint
   * is copied there once the engine saved it, and a run resumed on this runner after its own runner was
   * lost takes its checkpoints from there (loop/shared-checkpoints.ts). Unset: a run can only move to this
   * runner while its old runner still answers (the web server copies the checkpoint through both APIs).
   */
  ROLLBOOK_SHARED_CHECKPOINT_DIR: z.string().min(1).transform((p) => repoPath(p)).optional(),
  /** Shown in status(); several runners can register with one web tier. */
  RUNNER_NAME: z.string().min(1).default(os.hostname()),
  /**
   * Whether this runner starts stdio MCP servers at all. Experiments never name commands: they name a server
   * a workspace admin registered (command, args, env), and the runner runs it in a bubblewrap sandbox with no
   * access to the runner's files, environment or other runs (mcp/sandbox.ts). Off: no stdio server starts;
   * http/sse servers stay available.
   */
  MCP_ALLOW_STDIO: BooleanSetting("MCP_ALLOW_STDIO", "true"),
  /** Whether a registered stdio server whose definition asks for the network gets it (off: no network at all). */
  MCP_STDIO_NETWORK: BooleanSetting("MCP_STDIO_NETWORK", "false"),
  /**
   * Comma-separated folders stdio MCP servers may read besides the system's /usr and this repository's
   * node_modules (e.g. where the operator installed Python servers). Never this repository, DATA_DIR or the runs folder.
   */
  MCP_STDIO_READ_PATHS: z
    .string()
    .default("")
    .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
    .pipe(z.array(z.string().refine((p) => path.isAbsolute(p), { error: (i) => `MCP_STDIO_READ_PATHS: ${String(i.input)} is not an absolute path` }))),
  /**
   * How the runner shares its CPUs between workspaces (docs/security.md, "Fair share"): `auto` puts sandbox
   * processes in cgroups weighted by workspace, then by run (cgroup v2 cpu.weight or v1 cpu.shares: needs
   * root or a delegated cgroup), and falls back to niceness where it cannot, saying why at start; `cgroup`
   * refuses to start without cgroups; `nice` uses the fallback; `off` shares nothing.
   */
  RUNNER_CPU_SHARE: z.enum(["auto", "cgroup", "nice", "off"], { error: "RUNNER_CPU_SHARE is auto, cgroup, nice or off" }).default("auto"),
  /**
   * A cgroup delegated to the runner's user (e.g. systemd's Delegate=yes, or a folder an admin chowned),
   * as a path: the runner's groups go under it. Unset: the cgroup the runner runs in.
   */
  RUNNER_CGROUP: z
    .string()
    .refine((p) => path.isAbsolute(p) && !p.split("/").includes(".."), { error: "RUNNER_CGROUP is an absolute path without '..' (e.g. /sys/fs/cgroup/rollbook.slice)" })
    .optional(),
  /**
   * Internal addresses experiments may send requests to through this runner (judge endpoints, MCP http/sse
   * servers): comma-separated CIDR ranges, addresses and host names, each optionally :port, e.g.
   * `10.0.0.0/8,judge.lan:8000`. Everything else internal (loopback, link-local and cloud metadata, private,
   * unique-local, CGNAT, …) is refused at connect time (net/egress-policy.ts); the web server reads the same.
   */
  EGRESS_ALLOW: EgressAllowSetting,
});
export type RunnerEnv = Omit<z.infer<typeof RunnerEnv>, "ENGINE_PYTHON"> & { ENGINE_PYTHON: string };

/** The engine's interpreter when ENGINE_PYTHON is unset: the venv scripts/lib.sh made for the chosen backend. */
export const defaultEnginePython = (backend: RunnerEnv["ROLLBOOK_BACKEND"]): string =>
  path.join(REPO_ROOT, "gpu-runner/engine", backend === "vllm" ? ".venv-vllm" : ".venv", "bin/python");

/** Parse an environment (process.env by default); empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): RunnerEnv {
  const parsed = parseEnv(RunnerEnv, source, "runner");
  const env: RunnerEnv = { ...parsed, ENGINE_PYTHON: parsed.ENGINE_PYTHON ?? defaultEnginePython(parsed.ROLLBOOK_BACKEND) };
  // A folder servers may read must not hold what the sandbox exists to hide: the runs and the data dir's tokens.
  for (const p of env.MCP_STDIO_READ_PATHS) {
    const covers = (hidden: string) => path.relative(path.resolve(p), hidden).split(path.sep)[0] !== "..";
    if (covers(path.resolve(env.ROLLBOOK_RUNS_DIR)) || covers(REPO_ROOT)) {
      throw new Error(`Invalid runner environment:\n  MCP_STDIO_READ_PATHS: ${p} holds the runs folder or this repository (its DATA_DIR and tokens); list only the folders servers need`);
    }
  }
  if (env.ENGINE_URL && !env.ENGINE_TOKEN) {
    throw new Error(
      "Invalid runner environment:\n  ENGINE_TOKEN: required with ENGINE_URL — start that engine with ENGINE_TOKEN=<secret> and give the runner the same value",
    );
  }
  return env;
}
