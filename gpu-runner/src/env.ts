/**
 * The runner's one validated environment module: every setting the runner reads from the process
 * environment is parsed here once, with a default and a reason, so nothing else touches process.env.
 */
import path from "node:path";
import os from "node:os";
import { z } from "zod";

/** The repository root (gpu-runner/src/ → ../..); defaults below are relative to it. */
export const REPO_ROOT = path.resolve(import.meta.dirname, "../..");

const port = z.coerce.number().int().min(0).max(65535);

export const RunnerEnv = z.object({
  /** Port of the runner's tRPC HTTP server (0 = pick a free one; the chosen port is printed). */
  RUNNER_PORT: port.default(4100),
  /** Loopback by default: expose the runner deliberately (behind TLS) when the web tier is elsewhere. */
  RUNNER_HOST: z.string().min(1).default("127.0.0.1"),
  /** Bearer token the web server must send on every call. Change it outside development. */
  RUNNER_TOKEN: z.string().min(8).default("rollbook-dev-token"),
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
  /** Where run folders live: runs/<run>/events.jsonl here; the engine writes checkpoints beside them. */
  ROLLBOOK_RUNS_DIR: z.string().min(1).default(path.join(REPO_ROOT, "runs")),
  /** Shown in status(); several runners can register with one web tier. */
  RUNNER_NAME: z.string().min(1).default(os.hostname()),
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
  return parsed.data;
}
