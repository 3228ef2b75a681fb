/**
 * The engine's POST /tokenize (vLLM's route, same shape): a chat completion request in, the token ids the
 * engine renders it to out. The runner uses it to rebuild training samples from conversations sampled by an
 * outside client (OpenPipe ART): the prompt ids the engine fed the model, or a reply sampled elsewhere,
 * re-tokenised through the chat template. The Python side is rollbook_engine/contracts/tokenize.py.
 */
import { z } from "zod";
import { ChatCompletionRequest } from "./chat";

/** A chat completion request, parsed by the same rules as /v1/chat/completions, plus what vLLM's /tokenize adds. */
export const TokenizeRequest = ChatCompletionRequest.extend({
  add_generation_prompt: z
    .boolean()
    .default(true)
    .describe(
      "true: exactly the prompt ids /v1/chat/completions feeds the model for this body (generation prompt and " +
        "tool_choice prefill included). false: the whole conversation, last message included, without a " +
        "generation prompt (not with continue_from).",
    ),
  sampled_token_ids: z
    .array(z.number().int())
    .optional()
    .describe(
      "The reply sampled after this prompt (with add_generation_prompt true). When the engine served it after a " +
        "prefill (a tool_choice-forced call, which the messages alone do not say), the answer is the prompt it " +
        "fed the model, prefill included, and served is true (rollbook_engine/served_prompts.py).",
    ),
});
export type TokenizeRequest = z.infer<typeof TokenizeRequest>;

export const TokenizeResponse = z.object({
  count: z.number().int().describe("len(tokens)."),
  max_model_len: z.number().int().describe("The model's context in tokens."),
  tokens: z.array(z.number().int()),
  served: z.boolean().default(false).describe("The tokens are the prompt the engine fed before sampled_token_ids (its record), not a re-rendering."),
});
export type TokenizeResponse = z.infer<typeof TokenizeResponse>;
