/**
 * The scenario SDK's type declarations (gpu-runner/sdk/rollbook.d.ts), read once. The runner's type check
 * uses it, and the web editor can load the same text into Monaco, so both see one API.
 */
import { readFileSync } from "node:fs";

/** The text of rollbook.d.ts: an ambient `declare module "rollbook" { ... }`. */
export const SDK_DTS: string = readFileSync(new URL("../../sdk/rollbook.d.ts", import.meta.url), "utf8");

/**
 * Globals the sandbox defines besides the ES2022 built-ins: only `console`, whose methods all write to the
 * rollout's log like ctx.log (users reach for console.log by habit; it should work, not fail the type check).
 */
export const SANDBOX_GLOBALS_DTS = `declare var console: {
  /** Writes a line to the rollout's log, like ctx.log. */
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};
`;
