/**
 * The web API's one tRPC init file: context, procedures and error mapping.
 *
 *   publicProcedure     anyone
 *   protectedProcedure  a signed-in user (for now: everyone — no login yet; this is the seam for auth)
 *   workspaceProcedure  protected + ctx.workspaceId (for now: the default workspace)
 *
 * Services throw AppError; it is mapped to a tRPC code here once. Clients get the message, `data.appCode`
 * and `data.diagnostics` — never a stack trace, and never the text of an unexpected internal error.
 */
import { initTRPC, TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { type Diagnostic } from "@contracts";
import { AppError, isAppError, type AppErrorCode } from "./errors";
import { resolveRunner, runnerById, type RunnerHandle } from "./runner-client";
import { ensureDefaultWorkspace } from "./services/workspace";
import type { Db } from "./services/types";

export interface Context {
  db: Db;
  /** The signed-in user; null until login exists. */
  user: { id: string } | null;
  /** Set by the caller to act in a given workspace (tests); otherwise the default workspace. */
  workspaceId?: string;
  /** The runner new runs go to (default: RUNNER_NAME). */
  runnerName?: string;
  /** Where requests come from, for logs. */
  source?: string;
}

export function createContext(opts: { db: Db; workspaceId?: string; runnerName?: string; source?: string }): Context {
  return { db: opts.db, user: null, workspaceId: opts.workspaceId, runnerName: opts.runnerName, source: opts.source };
}

const CODE_MAP: Record<AppErrorCode, TRPC_ERROR_CODE_KEY> = {
  NOT_FOUND: "NOT_FOUND",
  BAD_INPUT: "BAD_REQUEST",
  CONFLICT: "CONFLICT",
  RUNNER_UNAVAILABLE: "SERVICE_UNAVAILABLE",
  RUNNER_ERROR: "BAD_GATEWAY",
  FORBIDDEN: "FORBIDDEN",
  UNAUTHORIZED: "UNAUTHORIZED",
};

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  isDev: false, // never put stacks in responses
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const app = isAppError(cause) ? cause : undefined;
    const zod = cause instanceof ZodError ? cause : undefined;
    const internal = error.code === "INTERNAL_SERVER_ERROR" && !app;
    const { stack: _stack, ...data } = shape.data as typeof shape.data & { stack?: string };
    return {
      ...shape,
      message: internal ? "Internal server error" : shape.message,
      data: {
        ...data,
        appCode: (app?.code ?? null) as AppErrorCode | null,
        diagnostics: (app?.diagnostics ?? null) as Diagnostic[] | null,
        /** Input validation problems, one line each: `files.config.json: expected string`. */
        issues: zod ? zod.issues.map((i) => `${i.path.map(String).join(".") || "(input)"}: ${i.message}`) : null,
      },
    };
  },
});

/** Maps AppError → TRPCError in one place; everything else passes through (and is hidden if internal). */
const errorMapper = t.middleware(async ({ next }) => {
  const res = await next();
  if (!res.ok && isAppError(res.error.cause)) {
    const app = res.error.cause as AppError;
    res.error = new TRPCError({ code: CODE_MAP[app.code], message: app.message, cause: app });
  }
  return res;
});

export const createTRPCRouter = t.router;
export const createCallerFactory = t.createCallerFactory;
export const mergeRouters = t.mergeRouters;

export const publicProcedure = t.procedure.use(errorMapper);

/** Seam for auth: when login exists, reject here without a user. */
export const protectedProcedure = publicProcedure.use(({ ctx, next }) => next({ ctx: { ...ctx, user: ctx.user } }));

/** The default workspace's id per database client, looked up (or created) once rather than per request. */
const defaultWorkspaces = new WeakMap<Db, Promise<string>>();
function defaultWorkspaceId(db: Db): Promise<string> {
  let id = defaultWorkspaces.get(db);
  if (!id) {
    id = ensureDefaultWorkspace(db).then((w) => w.id);
    id.catch(() => defaultWorkspaces.delete(db));
    defaultWorkspaces.set(db, id);
  }
  return id;
}

export const workspaceProcedure = protectedProcedure.use(async ({ ctx, next }) => {
  const workspaceId = ctx.workspaceId ?? (await defaultWorkspaceId(ctx.db));
  return next({
    ctx: {
      ...ctx,
      workspaceId,
      /** The runner new runs go to. */
      getRunner: (): Promise<RunnerHandle> => resolveRunner(ctx.db, ctx.runnerName),
      runnerById: (id: string): Promise<RunnerHandle> => runnerById(ctx.db, id),
    },
  });
});

export { AppError };
