/**
 * Which top-level fields a chat completion request to `/api/v1` may carry. OpenAI answers a field it does not
 * know with a 400 ("Unrecognized request argument supplied: …"); so does this door, so a typo or a vLLM-only
 * option is not silently dropped (a `response_format` ignored made RULER's judge write prose for 15 minutes).
 *
 * - Fields of ChatCompletionRequest (contracts/chat.ts) are the request.
 * - OpenAI fields that do not change the sampled reply (storage, billing, caching hints) are accepted and dropped.
 * - OpenAI fields that would change the reply and the engine does not implement are refused by name, unless
 *   they hold their neutral value (what the SDKs and LiteLLM send when the caller set nothing).
 * Accepted fields the engine does not read are dropped by the schema's parse (zod strips unknown keys).
 */
import { ChatCompletionRequest } from "@contracts";

const REQUEST_FIELDS = new Set(Object.keys(ChatCompletionRequest.shape));

/** OpenAI's request fields with no effect on what is sampled. */
const WITHOUT_EFFECT = new Set(["store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"]);

/** OpenAI's request fields the engine does not implement → whether a value is the neutral one (then accepted). */
const NOT_IMPLEMENTED: Record<string, (value: unknown) => boolean> = {
  frequency_penalty: (v) => v === 0 || v === null,
  presence_penalty: (v) => v === 0 || v === null,
  logit_bias: (v) => v === null || (typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 0),
  modalities: (v) => v === null || (Array.isArray(v) && v.length === 1 && v[0] === "text"),
  audio: (v) => v === null,
  prediction: (v) => v === null,
  web_search_options: (v) => v === null,
  reasoning_effort: (v) => v === null,
  verbosity: (v) => v === null,
  functions: (v) => v === null,
  function_call: (v) => v === null,
};

export type FieldProblem = { param: string; message: string };

/** The first top-level field this door cannot honour, or null. The body is already JSON (server/http/json-body.ts). */
export function unsupportedField(body: unknown): FieldProblem | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null; // the schema names it
  for (const [key, value] of Object.entries(body)) {
    if (REQUEST_FIELDS.has(key) || WITHOUT_EFFECT.has(key)) continue;
    const neutral = NOT_IMPLEMENTED[key];
    if (neutral) {
      if (neutral(value)) continue;
      return { param: key, message: `${key}: not supported by Rollbook's engine (leave it unset)` };
    }
    return { param: key, message: `Unrecognized request argument supplied: ${key.slice(0, 64)}` };
  }
  return null;
}

