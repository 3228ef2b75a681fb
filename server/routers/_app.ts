/**
 * The web API. Clients import the type only: `import type { AppRouter } from "@/server/routers/_app"`,
 * and derive input/output types with RouterInputs / RouterOutputs below — never hand-copied.
 */
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { createCallerFactory, createTRPCRouter } from "../trpc";
import { accountRouter } from "@/features/workspace/server/account-router";
import { flagsRouter } from "@/features/flags/server/router";
import { checkpointsRouter } from "@/features/checkpoints/server/router";
import { compareRouter } from "@/features/compare/server/router";
import { experimentsRouter } from "@/features/experiments/server/router";
import { runsRouter } from "@/features/runs/server/router";
import { runnersRouter } from "@/features/runners/server/router";
import { templatesRouter } from "@/features/experiments/server/templates-router";
import { workspaceRouter } from "@/features/workspace/server/router";
import { mcpServersRouter, secretsRouter } from "@/features/workspace/server/config-router";

export const appRouter = createTRPCRouter({
  account: accountRouter,
  workspace: workspaceRouter,
  experiments: experimentsRouter,
  runs: runsRouter,
  runners: runnersRouter,
  templates: templatesRouter,
  compare: compareRouter,
  checkpoints: checkpointsRouter,
  flags: flagsRouter,
  secrets: secretsRouter,
  mcpServers: mcpServersRouter,
});

export type AppRouter = typeof appRouter;
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** Server-side calls without HTTP (tests, scripts): `createCaller(createContext({ db, principal }))`. */
export const createCaller = createCallerFactory(appRouter);
