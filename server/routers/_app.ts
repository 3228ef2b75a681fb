/**
 * The web API. Clients import the type only: `import type { AppRouter } from "@/server/routers/_app"`,
 * and derive input/output types with RouterInputs / RouterOutputs below — never hand-copied.
 */
import type { inferRouterInputs, inferRouterOutputs } from "@trpc/server";
import { createCallerFactory, createTRPCRouter } from "../trpc";
import { accountRouter } from "./account";
import { alertsRouter } from "./alerts";
import { checkpointsRouter } from "./checkpoints";
import { compareRouter } from "./compare";
import { experimentsRouter } from "./experiments";
import { runsRouter } from "./runs";
import { runnersRouter } from "./runners";
import { templatesRouter } from "./templates";
import { workspaceRouter } from "./workspace";
import { mcpServersRouter, secretsRouter } from "./workspace-config";

export const appRouter = createTRPCRouter({
  account: accountRouter,
  workspace: workspaceRouter,
  experiments: experimentsRouter,
  runs: runsRouter,
  runners: runnersRouter,
  templates: templatesRouter,
  compare: compareRouter,
  checkpoints: checkpointsRouter,
  alerts: alertsRouter,
  secrets: secretsRouter,
  mcpServers: mcpServersRouter,
});

export type AppRouter = typeof appRouter;
export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** Server-side calls without HTTP (tests, scripts): `createCaller(createContext({ db, principal }))`. */
export const createCaller = createCallerFactory(appRouter);
