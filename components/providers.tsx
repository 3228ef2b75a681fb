"use client";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { TRPCProvider, makeTRPCClient } from "./trpc";
import { redirectIfUnauthorized } from "./auth/unauthorized";

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        queryCache: new QueryCache({ onError: redirectIfUnauthorized }),
        mutationCache: new MutationCache({ onError: redirectIfUnauthorized }),
        defaultOptions: {
          queries: {
            staleTime: 5_000,
            refetchOnWindowFocus: false,
            // Retrying cannot fix a missing sign-in or a refused role.
            retry: (count, error) => count < 1 && !/UNAUTHORIZED|FORBIDDEN/.test(String((error as { data?: { code?: string } }).data?.code)),
          },
        },
      }),
  );
  const [trpcClient] = useState(makeTRPCClient);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
