/**
 * The judge model an experiment configures (config.json → judge): the runner's own engine (the run's base
 * model with no adapter, by default) or any OpenAI-compatible endpoint, reached with the official `openai`
 * client. The API key is read from the runner's environment by the variable name the config gives; it is
 * never part of the config, the run's snapshot or the event log. Tokens and cost come back with every
 * answer so the runner can count them per rollout and per run.
 */
import OpenAI from "openai";
import type { ChatMessage, JudgeConfig } from "../../contracts";
import type { JudgeUsage } from "../../sdk/rollbook";
import type { EngineClient } from "../engine/client";
import { egressUrlProblem } from "../net/egress-check";
import { type EgressAllow, egressRefusalIn, NO_EGRESS_EXCEPTIONS } from "../net/egress-policy";
import { createGuardedFetch } from "../net/guarded-fetch";

export interface JudgeAnswer {
  content: string;
  usage: JudgeUsage;
}

export interface JudgeClient {
  /** Which model answers, for the run log: "SmolLM2-135M-Instruct (local engine)". */
  readonly description: string;
  chat(messages: ChatMessage[], options: { temperature?: number; max_tokens?: number }, signal: AbortSignal): Promise<JudgeAnswer>;
}

export class JudgeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JudgeError";
  }
}

function cost(config: JudgeConfig, prompt: number, completion: number): number {
  return (prompt * config.prompt_price_per_million + completion * config.completion_price_per_million) / 1_000_000;
}

/** The problem with a judge config on this runner (a missing key), or null. Checked when a run starts. */
export function judgeConfigProblem(config: JudgeConfig, env: NodeJS.ProcessEnv = process.env): string | null {
  if (config.base_url !== null && config.api_key_env !== null && !env[config.api_key_env]) {
    return `config.json → judge.api_key_env: the environment variable ${config.api_key_env} is not set on this runner`;
  }
  return null;
}

export function createJudgeClient(
  config: JudgeConfig,
  baseModel: string,
  engine: Pick<EngineClient, "chat">,
  /**
   * `runId`: the run the judge scores for; the runner's engine shares its batch slots fairly by it.
   * `egress`: the operator's EGRESS_ALLOW; an endpoint elsewhere than the public internet is refused without it.
   */
  { runId, env = process.env, egress = NO_EGRESS_EXCEPTIONS }: { runId?: string; env?: NodeJS.ProcessEnv; egress?: EgressAllow } = {},
): JudgeClient {
  if (config.base_url === null) {
    const model = config.model ?? baseModel;
    return {
      description: `${model} (the runner's engine)`,
      async chat(messages, options, signal) {
        const res = await engine.chat(
          {
            model,
            messages,
            temperature: options.temperature ?? config.temperature,
            max_tokens: options.max_tokens ?? config.max_tokens,
            n: 1,
            // A judge on the runner's engine competes with the runs' own sampling: it counts as its run's.
            ...(runId ? { user: runId } : {}),
          },
          AbortSignal.any([signal, AbortSignal.timeout(config.timeout_ms)]),
        );
        const prompt = res.usage.prompt_tokens;
        const completion = res.usage.completion_tokens;
        return { content: res.choices[0]?.message.content ?? "", usage: { promptTokens: prompt, completionTokens: completion, costUsd: cost(config, prompt, completion) } };
      },
    };
  }

  const model = config.model as string; // required with base_url (the schema says so)
  const apiKey = config.api_key_env ? env[config.api_key_env] : undefined;
  const baseUrl = config.base_url;
  const where = { field: "judge.base_url", actor: "this runner" as const, allow: egress };
  // Every connection the client opens (redirects included) is checked on the address it connects to.
  const client = new OpenAI({ baseURL: baseUrl, apiKey: apiKey ?? "not-needed", timeout: config.timeout_ms, maxRetries: 2, fetch: createGuardedFetch(where) });
  // Asked once up front too: a refused endpoint then fails at once with its rule, not after the client's retries.
  let refusal: Promise<string | null> | undefined;
  return {
    description: `${model} at ${config.base_url}`,
    async chat(messages, options, signal) {
      const refused = await (refusal ??= egressUrlProblem(baseUrl, where));
      if (refused) throw new JudgeError(refused);
      try {
        const res = await client.chat.completions.create(
          {
            model,
            messages: messages as OpenAI.Chat.ChatCompletionMessageParam[],
            temperature: options.temperature ?? config.temperature,
            max_tokens: options.max_tokens ?? config.max_tokens,
          },
          { signal },
        );
        const prompt = res.usage?.prompt_tokens ?? 0;
        const completion = res.usage?.completion_tokens ?? 0;
        return { content: res.choices[0]?.message.content ?? "", usage: { promptTokens: prompt, completionTokens: completion, costUsd: cost(config, prompt, completion) } };
      } catch (err) {
        if (signal.aborted) throw err;
        const egressRefused = egressRefusalIn(err);
        if (egressRefused) throw new JudgeError(egressRefused.message);
        throw new JudgeError(`judge ${model} at ${config.base_url} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  };
}
