/**
 * The runner's one validated environment module: every setting the runner reads from the process
 * environment is parsed here once, with a default and a reason, so nothing else touches process.env.
 */
import path from "node:path";
import os from "node:os";
import { z } from "zod";
import type { McpSecrets } from "./mcp/secrets";
import { RUNNER_TOKEN_MISSING } from "../contracts/tokens";

/** The repository root (gpu-runner/src/ → ../..); defaults below are relative to it. */
export const REPO_ROOT = path.resolve(import.meta.dirname, "../..");

const port = z.coerce.number().int().min(0).max(65535);

/** Settings of the runner and the web tier (bearer token, database): never shareable with MCP servers. */
const RUNNER_OWN = new Set(["RUNNER_TOKEN", "ENGINE_TOKEN", "RUNNER_PORT", "RUNNER_HOST", "ENGINE_URL", "ENGINE_PORT", "ENGINE_PYTHON", "DATABASE_URL", "TEST_DATABASE_URL"]);

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
  /** Python interpreter of the engine's virtual environment. */
  ENGINE_PYTHON: z.string().min(1).default(path.join(REPO_ROOT, "gpu-runner/engine/.venv/bin/python")),
  /** Base model the engine loads at start. */
  ENGINE_MODEL: z.string().min(1).default("SmolLM2-135M-Instruct"),
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
   * The largest request body (bytes) the runner reads into memory: tRPC calls (a run start carries the
   * experiment's files, up to 8 MB, JSON-escaped) and the chat pass-through (which has a tighter cap of its
   * own). Bigger bodies are 413, before more is read. Checkpoint uploads stream to disk under their own cap.
   */
  RUNNER_MAX_REQUEST_BYTES: z.coerce.number().int().min(65_536, "RUNNER_MAX_REQUEST_BYTES: a whole number of bytes, at least 65536").default(32 * 1024 * 1024),
  /** Where run folders live: runs/<run>/events.jsonl here; the engine writes checkpoints beside them. */
  ROLLBOOK_RUNS_DIR: z.string().min(1).default(path.join(REPO_ROOT, "runs")),
  /**
   * A folder every runner of the pool mounts at the same path (NFS, a shared volume). Set: each checkpoint
   * is copied there once the engine saved it, and a run resumed on this runner after its own runner was
   * lost takes its checkpoints from there (loop/shared-checkpoints.ts). Unset: a run can only move to this
   * runner while its old runner still answers (the web server copies the checkpoint through both APIs).
   */
  ROLLBOOK_SHARED_CHECKPOINT_DIR: z.string().min(1).optional(),
  /** Shown in status(); several runners can register with one web tier. */
  RUNNER_NAME: z.string().min(1).default(os.hostname()),
  /**
   * Whether experiments may start stdio MCP servers. A stdio server is any command an experiment names,
   * run as the runner's user on this machine: turn it off on a runner shared with people who may not run
   * code there. http/sse servers stay available.
   */
  MCP_ALLOW_STDIO: z
    .enum(["true", "false", "1", "0", "on", "off", "yes", "no"], { error: "MCP_ALLOW_STDIO is true or false" })
    .default("true")
    .transform((v) => ["true", "1", "on", "yes"].includes(v)),
  /**
   * Comma-separated names of this runner's environment variables that an experiment's MCP config may use
   * as ${NAME} in env and headers (e.g. GITHUB_TOKEN). None by default: config.json is written by any
   * experiment author, and must not be able to send the runner's own secrets to a server of their choosing.
   */
  MCP_SECRET_VARS: z
    .string()
    .default("")
    .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean))
    .pipe(
      z.array(
        z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "MCP_SECRET_VARS lists variable names separated by commas")
          .refine((name) => !RUNNER_OWN.has(name), {
            error: (issue) => `MCP_SECRET_VARS: ${String(issue.input)} is one of Rollbook's own settings and cannot be shared with MCP servers`,
          }),
      ),
    ),
});
export type RunnerEnv = z.infer<typeof RunnerEnv>;

/** Parse an environment (process.env by default); empty strings count as unset. */
export function loadEnv(source: NodeJS.ProcessEnv = process.env): RunnerEnv {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(RunnerEnv.shape)) {
    const value = source[key];
    if (value !== undefined && value !== "") cleaned[key] = value;
  }
  const parsed = RunnerEnv.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid runner environment:\n${lines.join("\n")}`);
  }
  if (parsed.data.ENGINE_URL && !parsed.data.ENGINE_TOKEN) {
    throw new Error(
      "Invalid runner environment:\n  ENGINE_TOKEN: required with ENGINE_URL — start that engine with ENGINE_TOKEN=<secret> and give the runner the same value",
    );
  }
  return parsed.data;
}

/**
 * The values MCP configs may reference as ${NAME}: only the names in MCP_SECRET_VARS, read once here so
 * the MCP code never sees the rest of the environment.
 */
export function mcpSecrets(env: RunnerEnv, source: Readonly<Record<string, string | undefined>> = process.env): McpSecrets {
  const values: Record<string, string> = {};
  for (const name of env.MCP_SECRET_VARS) {
    const value = source[name];
    if (value !== undefined) values[name] = value;
  }
  return { allowed: env.MCP_SECRET_VARS, values };
}
