/**
 * The web server's RUNNER_TOKEN. It is optional in server/env.ts only so that tools sharing that module
 * (migrations, tests) need no runner; the web server refuses to start without it, and talking to the
 * configured runner without it fails with the same message.
 */
import { RUNNER_TOKEN_MISSING, weakTokenWarning } from "@/contracts/tokens";
import type { ServerEnv } from "./env";
import { AppError } from "./errors";

export function requireRunnerToken(e: Pick<ServerEnv, "RUNNER_TOKEN">): string {
  if (!e.RUNNER_TOKEN) throw new AppError("RUNNER_UNAVAILABLE", RUNNER_TOKEN_MISSING);
  return e.RUNNER_TOKEN;
}

/** At start: the token, or a clear error; a warning (never the token) when it is short. */
export function startupRunnerToken(e: Pick<ServerEnv, "RUNNER_TOKEN">, warn: (message: string) => void): string {
  const token = requireRunnerToken(e);
  const weak = weakTokenWarning("RUNNER_TOKEN", token);
  if (weak) warn(weak);
  return token;
}
