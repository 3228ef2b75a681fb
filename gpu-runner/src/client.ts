/**
 * The web server's client of a runner: `createRunnerClient(url, token)`. Queries and mutations go through
 * httpBatchLink; the events subscription through httpSubscriptionLink (SSE; Node has no global
 * EventSource, so the `eventsource` package is used, with the bearer token added via its fetch option).
 *
 *   const runner = createRunnerClient("http://127.0.0.1:4100", token);
 *   await runner.start.mutate(spec);
 *   runner.events.subscribe({ run_id, after_seq }, { onData: ({ id, data }) => ..., onComplete, onError });
 *
 * `id` is the event's seq as a string; on reconnect the link resends it as lastEventId automatically.
 */
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { EventSource } from "eventsource";
import type { RunnerRouter } from "./router";

export type { RunnerRouter } from "./router";

/**
 * `fetch`: how every request reaches the runner (default: the global fetch). The web server passes a
 * guarded one (net/guarded-fetch.ts) for runners a workspace registered: their URL is a user's input.
 */
export function createRunnerClient(url: string, token: string, options: { fetch?: typeof fetch } = {}) {
  const base = url.replace(/\/+$/, "");
  const authorization = `Bearer ${token}`;
  const fetchImpl = options.fetch ?? fetch;
  return createTRPCClient<RunnerRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({
          url: base,
          EventSource,
          eventSourceOptions: () => ({
            fetch: (input: string | URL | Request, init?: RequestInit) =>
              fetchImpl(input, { ...init, headers: { ...(init?.headers as Record<string, string>), Authorization: authorization } }),
          }),
        }),
        false: httpBatchLink({ url: base, headers: () => ({ Authorization: authorization }), fetch: fetchImpl }),
      }),
    ],
  });
}

export type RunnerClient = ReturnType<typeof createRunnerClient>;
