/**
 * What one `/api/v1` completion may take from a shared engine: a max_tokens default and ceiling
 * (API_MAX_TOKENS_DEFAULT / API_MAX_TOKENS_CEILING; the context left is no default: a judge that sets none
 * wrote until 8,192 tokens), and a deadline (API_REQUEST_DEADLINE_S) that answers the caller with what
 * happened before the web → runner call's own 300 s limit turns it into "unreachable". Aborting the call to the
 * runner cancels the engine's sampling of it (the runner and engine cancel a request whose caller left).
 */
import type { ChatCompletionRequest } from "@contracts";
import type { ServerEnv } from "@/server/env";

type Budget = { ok: true; maxTokens: number } | { ok: false; param: string; message: string };

export function tokenBudget(body: Pick<ChatCompletionRequest, "max_tokens" | "max_completion_tokens">, e: Pick<ServerEnv, "API_MAX_TOKENS_DEFAULT" | "API_MAX_TOKENS_CEILING">): Budget {
  const ceiling = e.API_MAX_TOKENS_CEILING;
  for (const param of ["max_tokens", "max_completion_tokens"] as const) {
    const asked = body[param];
    if (asked !== undefined && asked > ceiling) {
      return { ok: false, param, message: `${param}: at most ${ceiling} here (this server's API_MAX_TOKENS_CEILING); asked for ${asked}` };
    }
  }
  const asked = [body.max_tokens, body.max_completion_tokens].filter((v): v is number => v !== undefined);
  // With both, the smaller wins (as the engine reads them); with neither, the default (never above the ceiling).
  return { ok: true, maxTokens: asked.length > 0 ? Math.min(...asked) : Math.min(e.API_MAX_TOKENS_DEFAULT, ceiling) };
}

export class RequestDeadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  passed = false;

  constructor(
    private readonly seconds: number,
    private readonly maxTokens: number,
  ) {
    this.timer = setTimeout(() => {
      this.passed = true;
      this.controller.abort(new Error(this.message()));
    }, seconds * 1000);
    this.timer.unref?.();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  message(): string {
    return (
      `generation exceeded this server's ${this.seconds} s deadline for one completion (API_REQUEST_DEADLINE_S) with ` +
      `max_tokens ${this.maxTokens}; its sampling was stopped. Ask for fewer tokens, or stream the reply (stream: true)`
    );
  }
}

/** The longest `user` the engine takes (contracts/chat.ts). */
const MAX_USER = 256;

/**
 * The engine's fair-share key for an API call: `api:<workspace>/<caller's user>`. The engine shares batch slots
 * by what comes before the "/" first (a run: the runner sends "<run id>/<rollout id>"), then by what follows;
 * so a workspace's API traffic is one share beside each run, whatever `user` values its callers send (many
 * distinct ones would otherwise be many shares, and a run id as `user` would take that run's). Run ids have no ":".
 */
export function apiTenant(workspaceId: string, user: string | undefined): string {
  const head = `api:${workspaceId}/`;
  return head + (user ?? "").slice(0, Math.max(0, MAX_USER - head.length));
}
