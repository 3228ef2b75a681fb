/**
 * Validation of what user code passes to ctx.chat. The isolate hands the host plain copied data, but its
 * shape is still the user's: check it against the contract's ChatMessage so a typo ("rol": "user") fails
 * inside the rollout with a clear message instead of reaching the engine as a malformed request.
 */
import { z } from "zod";
import { ChatCompletionRequest, ChatMessage } from "../../contracts";

/** ctx.chat's options (the SDK's ChatOptions): the sampling knobs of a chat completion request. */
export const ChatOptions = ChatCompletionRequest.pick({
  temperature: true,
  top_p: true,
  max_tokens: true,
  stop: true,
  seed: true,
  tools: true,
}).strict();
export type ChatOptions = z.infer<typeof ChatOptions>;

const ChatMessages = z.array(ChatMessage).min(1, "needs at least one message");

function formatIssues(prefix: string, error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.map((k) => (typeof k === "number" ? `[${k}]` : `.${String(k)}`)).join("");
      return `${prefix}${path}: ${i.message}`;
    })
    .join("; ");
}

export type ChatArgs = { ok: true; messages: ChatMessage[]; options: ChatOptions } | { ok: false; message: string };

export function parseChatArgs(messages: unknown, options: unknown): ChatArgs {
  const m = ChatMessages.safeParse(messages);
  if (!m.success) return { ok: false, message: `ctx.chat: invalid messages: ${formatIssues("messages", m.error)}` };
  const o = ChatOptions.safeParse(options ?? {});
  if (!o.success) return { ok: false, message: `ctx.chat: invalid options: ${formatIssues("options", o.error)}` };
  return { ok: true, messages: m.data, options: o.data };
}
