"use client";
/**
 * The browser's tRPC client: typed from the server's AppRouter (type-only import, nothing of the server is
 * bundled), used through @tanstack/react-query with `useTRPC()` (query/mutation options) or
 * `useTRPCClient()` (imperative calls such as paging a run's events).
 */
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import type { inferRouterOutputs } from "@trpc/server";
import superjson from "superjson";
import type { AppRouter } from "@/server/routers/_app";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

export type RouterOutputs = inferRouterOutputs<AppRouter>;

export function makeTRPCClient() {
  return createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: "/api/trpc", transformer: superjson })],
  });
}
