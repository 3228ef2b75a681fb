/**
 * What ART's inference client sends that Rollbook reads (pure: no database), for art-sampling.ts.
 *
 * Model names: ART's ServerlessBackend names a model `wandb-artifact:///<entity>/<project>/<name>` (its
 * newest checkpoint) and `…:step<N>` (that checkpoint) — `_model_inference_name` in ART's
 * serverless/backend.py. Token ids: ART's tokenize step recovers the sampled ids from each logprobs token
 * written `token_id:<id>` (vLLM's return_tokens_as_token_ids), else it re-tokenizes the text, which may
 * not give back the ids the model sampled.
 */
import { identifierSource, type ChatCompletionRequest } from "@contracts";

export interface ArtModelName {
  entity: string;
  project: string;
  name: string;
  /** null: the model's newest checkpoint (its base model while it has none). */
  step: number | null;
}

const PREFIX = "wandb-artifact:///";
/** `:step<N>` with N a step of the shared grammar (identifiers.json: ASCII digits, no leading zero). */
const STEP_SUFFIX = new RegExp(`:step(${identifierSource("step")})$`);

/** `wandb-artifact:///<entity>/<project>/<name>[:step<N>]` → its parts; null for any other model name. */
export function parseArtModelName(model: string): ArtModelName | null {
  if (!model.startsWith(PREFIX)) return null;
  let rest = model.slice(PREFIX.length);
  const suffix = STEP_SUFFIX.exec(rest);
  if (suffix) rest = rest.slice(0, suffix.index);
  const parts = rest.split("/");
  // A project or model name holds no "/" (ART builds the name from the three fields, W&B refuses "/" in them).
  if (parts.length !== 3 || parts.some((p) => p === "")) return null;
  const [entity, project, name] = parts as [string, string, string];
  return { entity, project, name, step: suffix ? Number(suffix[1]) : null };
}

/**
 * The body forwarded for an ART client: asked for logprobs, each logprobs token comes back as
 * `token_id:<id>` so ART recovers the exact sampled ids, unless the caller said otherwise
 * (return_tokens_as_token_ids: false).
 */
export function withTokenIds(body: ChatCompletionRequest): ChatCompletionRequest {
  if (!body.logprobs || body.return_tokens_as_token_ids !== undefined) return body;
  return { ...body, return_tokens_as_token_ids: true };
}
