/**
 * The judge model an experiment configures (config.json → judge): the runner's own engine (the run's base
 * model with no adapter, by default) or any OpenAI-compatible endpoint, reached with the official `openai`
 * client. The API key is a workspace secret the config names (judge.api_key_secret), which the web server
 * sends with the run (RunSpec.secrets); it is never part of the config, the run's snapshot or the event log,
 * and the runner's own environment is never read for it. Tokens and cost come back with every answer so the
 * runner can count them per rollout and per run.
 */
import OpenAI from "openai";
import { SecretMask, type ChatMessage, type JudgeConfig } from "../../../contracts";
import type { JudgeUsage } from "../../../contracts/sdk/rollbook";
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

/** The problem with a judge config for this run (a key it names but was not given), or null. Checked when a run starts. */
export function judgeConfigProblem(config: JudgeConfig, secrets: Readonly<Record<string, string>>): string | null {
  if (config.api_key_secret !== null && !Object.hasOwn(secrets, config.api_key_secret)) {
    return `config.json → judge.api_key_secret: this workspace has no secret named ${config.api_key_secret} (an admin adds it in Team → Secrets)`;
  }
  return null;
}

export function createJudgeClient(
  config: JudgeConfig,
  baseModel: string,
  engine: Pick<EngineClient, "chat">,
  /**
   * `runId`: the run the judge scores for; the runner's engine shares its batch slots fairly by it.
   * `secrets`: the run's workspace secrets; the key is the one judge.api_key_secret names.
   * `egress`: the operator's EGRESS_ALLOW; an endpoint elsewhere than the public internet is refused without it.
   */
  { runId, secrets = {}, egress = NO_EGRESS_EXCEPTIONS }: { runId?: string; secrets?: Readonly<Record<string, string>>; egress?: EgressAllow } = {},
): JudgeClient {
  const client = createRawJudgeClient(config, baseModel, engine, { runId, secrets, egress });
  const mask = new SecretMask(secrets);
  if (mask.empty) return client;
  // What a judge endpoint answers is masked before the reward sees it: an echoed key goes no further.
  return {
    description: client.description,
    async chat(messages, options, signal) {
      try {
        const answer = await client.chat(messages, options, signal);
        return { ...answer, content: mask.mask(answer.content) };
      } catch (err) {
        if (err instanceof Error) err.message = mask.mask(err.message);
        throw err;
      }
    },
  };
}

function createRawJudgeClient(
  config: JudgeConfig,
  baseModel: string,
  engine: Pick<EngineClient, "chat">,
  { runId, secrets, egress }: { runId?: string; secrets: Readonly<Record<string, string>>; egress: EgressAllow },
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
            ...(runId ? { user: `${runId}/judge` } : {}),
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
  const apiKey = config.api_key_secret && Object.hasOwn(secrets, config.api_key_secret) ? secrets[config.api_key_secret] : undefined;
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
