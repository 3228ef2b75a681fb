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
});
export type TokenizeRequest = z.infer<typeof TokenizeRequest>;

export const TokenizeResponse = z.object({
  count: z.number().int().describe("len(tokens)."),
  max_model_len: z.number().int().describe("The model's context in tokens."),
  tokens: z.array(z.number().int()),
});
export type TokenizeResponse = z.infer<typeof TokenizeResponse>;
