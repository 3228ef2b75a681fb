/**
 * The web API's one tRPC init file: context, authorization and error mapping.
 *
 * Every procedure declares what it needs by the builder it is made with (its meta.access, which the
 * authorization matrix test reads from the router itself):
 *
 *   publicProcedure   no credential (only what a signed-out page needs: is there an owner yet?)
 *   userProcedure     a signed-in user, any workspace (their account, tokens, workspaces, invites)
 *   viewerProcedure   a member of the active workspace with at least that role — ctx.workspaceId, ctx.role
 *   memberProcedure   … member (write: experiments, runs)
 *   adminProcedure    … admin (people: invites, roles)
 *   ownerProcedure    … owner
 *
 * The caller is resolved before a call (route handler: session cookie or API token, server/auth/principal);
 * the membership here, per call, by server/auth/workspace-access (Langfuse's
 * enforceUserIsAuthedAndProjectMember shape). Services throw AppError; it is mapped to a tRPC code here once.
 * Clients get the message, `data.appCode` and `data.diagnostics` — never a stack trace, and never the text
 * of an unexpected internal error.
 */
import { initTRPC, TRPCError, type TRPC_ERROR_CODE_KEY } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { type Diagnostic, findPrototypeKey, formatZodIssues, nestedTooDeepMessage, prototypeKeyMessage, valueTooDeep } from "@contracts";
import { AppError, isAppError, type AppErrorCode } from "./errors";
import { resolveRunner, runnerById, type RunnerHandle } from "./runner-client";
import { type Access, type Role } from "@contracts/roles";
import { requireRole, resolveWorkspaceAccess, type WorkspaceAccess } from "./auth/workspace-access";
import type { Principal, SessionUser } from "./auth/principal";
import { isInstanceOperator } from "@/features/workspace/server";
import type { Db } from "./db-types";
import { findTextProblem } from "@contracts/text-rules";

export interface Context {
  db: Db;
  /** Who is calling (null: no valid credential). */
  user: SessionUser | null;
  /** Set when the caller authenticated with an API token: the token acts only in its workspace. */
  tokenWorkspaceId: string | null;
  /** The workspace the caller asks to act in (the x-rollbook-workspace header, or a test's choice): a member or FORBIDDEN. */
  requestedWorkspaceId: string | null;
  /** The workspace the browser remembers (its cookie): used while the caller is a member, else their own. */
  rememberedWorkspaceId: string | null;
  /** The runner new runs go to (default: RUNNER_NAME). */
  runnerName?: string;
  /** Where requests come from, for logs. */
  source?: string;
  /** The membership, resolved once per request (a batch shares it). */
  access?: Promise<WorkspaceAccess>;
}

export function createContext(opts: {
  db: Db;
  principal?: Principal | null;
  /** The workspace to act in (the caller must be a member); default: the remembered one, else the caller's oldest membership. */
  workspaceId?: string | null;
  /** The browser's remembered workspace (its cookie). */
  rememberedWorkspaceId?: string | null;
  runnerName?: string;
  source?: string;
}): Context {
  return {
    db: opts.db,
    user: opts.principal?.user ?? null,
    tokenWorkspaceId: opts.principal?.tokenWorkspaceId ?? null,
    requestedWorkspaceId: opts.workspaceId ?? null,
    rememberedWorkspaceId: opts.rememberedWorkspaceId ?? null,
    runnerName: opts.runnerName,
    source: opts.source,
  };
}

interface Meta {
  /** What the procedure needs; a procedure without it is refused (fail closed). */
  access: Access;
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

/**
 * superjson, with the nesting of each HTTP input checked before superjson walks it: its walk of `meta`
 * recurses, and a body nested a few thousand deep overflowed the stack (a 500). JSON.parse before it
 * copes with any depth; valueTooDeep does not recurse.
 */
const transformer = {
  input: {
    serialize: (value: unknown) => superjson.serialize(value),
    deserialize: (value: unknown) => {
      if (valueTooDeep(value)) throw new TRPCError({ code: "BAD_REQUEST", message: `input: ${nestedTooDeepMessage()}` });
      // Before superjson copies it: a parsed "__proto__" key would become the copy's prototype or vanish
      // (contracts/json-keys.ts). The path is the input's, without superjson's envelope ("json").
      const proto = findPrototypeKey(value);
      if (proto) {
        const path = proto[0] === "json" ? proto.slice(1) : proto;
        throw new TRPCError({ code: "BAD_REQUEST", message: `${path.join(".")}: ${prototypeKeyMessage(String(proto.at(-1)))}` });
      }
      return superjson.deserialize(value as Parameters<typeof superjson.deserialize>[0]);
    },
  },
  output: superjson,
};

const t = initTRPC.context<Context>().meta<Meta>().create({
  transformer,
  isDev: false, // never put stacks in responses
  errorFormatter({ shape, error }) {
    const cause = error.cause;
    const app = isAppError(cause) ? cause : undefined;
    const zod = cause instanceof ZodError ? cause : undefined;
    const internal = error.code === "INTERNAL_SERVER_ERROR" && !app;
    const { stack: _stack, ...data } = shape.data as typeof shape.data & { stack?: string };
    /** Input validation problems, one line each: `files.config.json: expected string`. */
    const issues = zod ? formatZodIssues(zod, "", "(input)") : null;
    return {
      ...shape,
      // A ZodError's own message is its issues as a JSON array: the message says them as "field: message".
      message: internal ? "Internal server error" : issues ? issues.join("; ") : shape.message,
      data: {
        ...data,
        appCode: (app?.code ?? null) as AppErrorCode | null,
        diagnostics: (app?.diagnostics ?? null) as Diagnostic[] | null,
        issues,
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

/**
 * A NUL anywhere in the input is refused naming its path ("notes: contains a NUL character (\u0000)"):
 * Postgres cannot store it, and it used to surface as a 500 naming nothing. Before the input is parsed, so
 * it covers every procedure and every string, files included; the other control characters are refused
 * per field by the input schemas (contracts/text-rules.ts). A `__proto__` key is refused earlier, in the
 * transformer, before superjson copies the input.
 */
const refuseNul = t.middleware(async ({ getRawInput, next }) => {
  const problem = findTextProblem(await getRawInput());
  if (problem) throw new AppError("BAD_INPUT", problem);
  return next();
});

const base = t.procedure.use(errorMapper).use(refuseNul);

export const publicProcedure = base.meta({ access: "public" });

const requireUser = t.middleware(({ ctx, next }) => {
  if (!ctx.user) throw new AppError("UNAUTHORIZED", "sign in first (or send an API token as Authorization: Bearer …)");
  return next({ ctx: { ...ctx, user: ctx.user } });
});

/** A signed-in user; no workspace needed. */
export const userProcedure = base.meta({ access: "user" }).use(requireUser);

/** A member of the active workspace with at least `needed`. */
function roleProcedure(needed: Role) {
  return base
    .meta({ access: needed })
    .use(requireUser)
    .use(async ({ ctx, next }) => {
      ctx.access ??= resolveWorkspaceAccess(ctx.db, ctx.user.id, {
        requestedWorkspaceId: ctx.requestedWorkspaceId,
        rememberedWorkspaceId: ctx.rememberedWorkspaceId,
        tokenWorkspaceId: ctx.tokenWorkspaceId,
      });
      const { workspaceId, role } = await ctx.access;
      requireRole(role, needed);
      let operator: Promise<boolean> | undefined;
      const user = ctx.user;
      return next({
        ctx: {
          ...ctx,
          workspaceId,
          role,
          /** Whether the caller operates this instance (features/workspace/server/operator.ts): asked once per call, when a procedure needs it. */
          isOperator: (): Promise<boolean> => (operator ??= isInstanceOperator(ctx.db, user)),
          /** The runner new runs go to. */
          getRunner: (): Promise<RunnerHandle> => resolveRunner(ctx.db, ctx.runnerName, workspaceId),
          runnerById: (id: string): Promise<RunnerHandle> => runnerById(ctx.db, id),
        },
      });
    });
}

export const viewerProcedure = roleProcedure("viewer");
export const memberProcedure = roleProcedure("member");
export const adminProcedure = roleProcedure("admin");
export const ownerProcedure = roleProcedure("owner");

export { AppError };
