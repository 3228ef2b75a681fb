/**
 * Typed errors thrown by services. Routers never build tRPC errors themselves: server/trpc.ts maps each
 * AppError code to a tRPC code in one place, and passes `diagnostics` (never stacks) to the client.
 */
import { type Diagnostic } from "@contracts";

export const APP_ERROR_CODES = [
  "NOT_FOUND",
  "BAD_INPUT",
  "CONFLICT",
  "RUNNER_UNAVAILABLE",
  "RUNNER_ERROR",
  "FORBIDDEN",
  "UNAUTHORIZED",
] as const;
export type AppErrorCode = (typeof APP_ERROR_CODES)[number];

export class AppError extends Error {
  readonly code: AppErrorCode;
  readonly diagnostics: Diagnostic[] | undefined;

  constructor(code: AppErrorCode, message: string, opts: { diagnostics?: Diagnostic[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AppError";
    this.code = code;
    this.diagnostics = opts.diagnostics;
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError || (e instanceof Error && e.name === "AppError" && "code" in e);
}

/** The innermost message of an error chain, for one-line reasons like "connect ECONNREFUSED 127.0.0.1:4100". */
export function rootMessage(e: unknown): string {
  let cur: unknown = e;
  let msg = e instanceof Error ? e.message : String(e);
  for (let i = 0; i < 8 && cur instanceof Error && cur.cause !== undefined; i++) {
    cur = cur.cause;
    if (cur instanceof Error && cur.message) msg = cur.message;
    else if (typeof cur === "object" && cur !== null && "code" in cur) msg = String((cur as { code: unknown }).code);
  }
  return msg;
}
