/**
 * Typed HTTP client of the Python engine (localhost). Every response is validated with the shared zod
 * contracts, so a drifting engine fails loudly here rather than corrupting training data downstream.
 */
import { Agent, fetch as undiciFetch } from "undici";
import { z } from "zod";
import {
  ChatCompletionResponse,
  EngineHealth,
  CheckpointInfo,
  DetokenizeResponse,
  type TokenizeRequest,
  TokenizeResponse,
  TrainStreamLine,
  RUNNER_WORKSPACE_HEADER,
  type ChatCompletionRequest,
  type TrainRequest,
} from "../../../contracts";

export class EngineError extends Error {
  constructor(
    message: string,
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = "EngineError";
  }
}

export const CheckpointList = z.union([
  z.array(CheckpointInfo),
  z.object({ checkpoints: z.array(CheckpointInfo) }).transform((o) => o.checkpoints),
]);

async function errorText(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { detail?: unknown; error?: unknown };
    const detail = body.detail ?? body.error;
    // The chat route answers in OpenAI's shape, {"error": {"message", "param", ...}}: its message names the field.
    const message = (detail as { message?: unknown } | null)?.message;
    if (typeof message === "string") return message;
    if (detail !== undefined) return typeof detail === "string" ? detail : JSON.stringify(detail);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, 500) || res.statusText;
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) {
    const issues = r.error.issues.slice(0, 5).map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new EngineError(`engine returned a malformed ${what}: ${issues.join("; ")}`);
  }
  return r.data;
}

export interface EngineClientOptions {
  /**
   * How long a response's headers, or the gap between two of its body chunks, may take before the request
   * fails; 0 (the default) waits as long as the caller's own signal allows. Node's global fetch gives up after
   * 300 s (undici's headersTimeout/bodyTimeout): under load a chat call queued behind a train step waited
   * longer than that and whole steps of rollouts failed with "fetch failed" although the run's
   * rollout_timeout_ms was 10 minutes. Every long call here has its own deadline (the rollout's limit, the
   * step's abort, timeoutMs), so the transport adds none.
   */
  waitLimitMs?: number;
  /**
   * The workspace every request of this client acts for, sent as RUNNER_WORKSPACE_HEADER: the engine serves a
   * checkpoint (and starts a fork from one) only for the workspace that owns its run (rollbook_engine/
   * ownership.py), whatever the runner decided before. Absent: base model only.
   */
  workspace?: string;
}

/** One connection pool per wait limit, shared by every client of the engine in this process. */
const agents = new Map<number, Agent>();
function engineAgent(waitLimitMs: number): Agent {
  let agent = agents.get(waitLimitMs);
  if (!agent) agents.set(waitLimitMs, (agent = new Agent({ headersTimeout: waitLimitMs, bodyTimeout: waitLimitMs })));
  return agent;
}

export class EngineClient {
  private readonly agent: Agent;

  /** `token`: the engine's ENGINE_TOKEN, sent as a bearer on every request (the engine refuses all but /health without it). */
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
    private readonly options: EngineClientOptions = {},
  ) {
    this.agent = engineAgent(options.waitLimitMs ?? 0);
  }

  /** This client acting for `workspace` (a run's RunSpec.workspace_id): its checkpoints, and only its, are served. */
  forWorkspace(workspace: string): EngineClient {
    return new EngineClient(this.baseUrl, this.token, { ...this.options, workspace });
  }

  /**
   * undici's own fetch with this client's Agent (a dispatcher must come from the same undici as the fetch using
   * it). The casts: undici's RequestInit and Response are the same web types as the global ones, declared apart.
   */
  private fetch(pathname: string, init: RequestInit): Promise<Response> {
    return undiciFetch(`${this.baseUrl}${pathname}`, { ...(init as object), dispatcher: this.agent }) as unknown as Promise<Response>;
  }

  /** A request to the engine with its token and nothing else (no status check): for passing a response through. */
  fetchRaw(pathname: string, init: RequestInit = {}): Promise<Response> {
    return this.fetch(pathname, { ...init, headers: this.withToken(init.headers) });
  }

  private withToken(headers: RequestInit["headers"]): RequestInit["headers"] {
    const merged = new Headers(headers);
    if (this.token) merged.set("authorization", `Bearer ${this.token}`);
    // Set here, never taken from a caller's headers: the pass-through's caller is the web server, and what
    // workspace a request acts for is this client's to say.
    merged.delete(RUNNER_WORKSPACE_HEADER);
    if (this.options.workspace) merged.set(RUNNER_WORKSPACE_HEADER, this.options.workspace);
    return merged;
  }

  private async request(pathname: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Response> {
    const { timeoutMs, signal, headers, ...rest } = init;
    const signals = [signal, timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined].filter(
      (s): s is AbortSignal => s != null,
    );
    let res: Response;
    try {
      res = await this.fetch(pathname, {
        ...rest,
        headers: this.withToken(headers),
        signal: signals.length ? AbortSignal.any(signals) : undefined,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason ?? err;
      // undici says "fetch failed" and puts what failed (refused, reset, a timeout) in `cause`.
      const cause = (err as Error & { cause?: Error }).cause?.message;
      throw new EngineError(`engine unreachable at ${this.baseUrl}${pathname}: ${(err as Error).message}${cause ? ` (${cause})` : ""}`);
    }
    if (!res.ok) throw new EngineError(`engine ${pathname} → ${res.status}: ${await errorText(res)}`, res.status);
    return res;
  }

  async health(timeoutMs = 5_000): Promise<EngineHealth> {
    const res = await this.request("/health", { timeoutMs });
    return parse(EngineHealth, await res.json(), "health");
  }

  async chat(body: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatCompletionResponse> {
    const res = await this.request("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    return parse(ChatCompletionResponse, await res.json(), "chat completion");
  }

  async checkpoints(runId: string): Promise<CheckpointInfo[]> {
    try {
      const res = await this.request(`/runs/${encodeURIComponent(runId)}/checkpoints`, { timeoutMs: 30_000 });
      return parse(CheckpointList, await res.json(), "checkpoint list");
    } catch (err) {
      if (err instanceof EngineError && err.status === 404) return [];
      throw err;
    }
  }

  /** The newest checkpoint's step, 0 when the run has none. */
  async latestStep(runId: string): Promise<number> {
    const list = await this.checkpoints(runId);
    return list.reduce((max, c) => Math.max(max, c.step), 0);
  }

  /** POST /detokenize: the text piece of each token id (same order), as the engine's tokenizer decodes it. */
  async detokenize(tokenIds: readonly number[], signal?: AbortSignal): Promise<string[]> {
    const res = await this.request("/detokenize", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token_ids: tokenIds }),
      signal,
      timeoutMs: 30_000,
    });
    const { pieces } = parse(DetokenizeResponse, await res.json(), "detokenize response");
    if (pieces.length !== tokenIds.length) throw new EngineError(`engine /detokenize answered ${pieces.length} pieces for ${tokenIds.length} ids`);
    return pieces;
  }

  /**
   * POST /tokenize: the token ids the engine renders a chat request to. With add_generation_prompt true (the
   * default) exactly the prompt ids /v1/chat/completions feeds the model for that body; false: the whole
   * conversation without a generation prompt (a reply sampled elsewhere, re-tokenised).
   */
  async tokenize(body: z.input<typeof TokenizeRequest>, signal?: AbortSignal): Promise<TokenizeResponse> {
    const res = await this.request("/tokenize", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
      timeoutMs: 30_000,
    });
    const out = parse(TokenizeResponse, await res.json(), "tokenize response");
    if (out.count !== out.tokens.length) throw new EngineError(`engine /tokenize answered count ${out.count} for ${out.tokens.length} ids`);
    return out;
  }

  /** POST /train and yield each JSON line of the progress stream, validated. */
  async *train(body: TrainRequest, signal?: AbortSignal): AsyncGenerator<TrainStreamLine, void, undefined> {
    const res = await this.request("/train", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    if (!res.body) throw new EngineError("engine /train returned no body");
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (line) yield parseTrainLine(line);
      }
    }
    buffer += decoder.decode();
    if (buffer.trim()) yield parseTrainLine(buffer.trim());
  }
}

export function parseTrainLine(line: string): TrainStreamLine {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new EngineError(`engine /train sent a line that is not JSON: ${line.slice(0, 200)}`);
  }
  return parse(TrainStreamLine, value, "train stream line");
}
