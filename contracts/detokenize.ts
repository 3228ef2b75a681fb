/**
 * The engine's POST /detokenize: token ids to the text pieces its tokenizer decodes them to, one per id
 * (special tokens included, as written; a piece holding part of a UTF-8 character decodes to U+FFFD). The
 * runner's token view asks it, so the runner needs no tokenizer of its own.
 */
import { z } from "zod";

/** More ids than this in one request are refused (the view asks for the distinct ids of one rollout). */
export const MAX_DETOKENIZE_IDS = 100_000;

export const DetokenizeRequest = z.object({
  token_ids: z.array(z.number().int().min(0)).max(MAX_DETOKENIZE_IDS),
});
export type DetokenizeRequest = z.infer<typeof DetokenizeRequest>;

export const DetokenizeResponse = z.object({ pieces: z.array(z.string()) });
export type DetokenizeResponse = z.infer<typeof DetokenizeResponse>;
