/** The model name in a chat completion's server-sent events, as the caller wrote it (features/openai-api/server/openai-api.ts). */

/**
 * Rewrites `"model"` in each `data: {…}` event to the caller's name, line by line (an event may be split
 * across network chunks, so partial lines are held until their newline). Other lines pass unchanged.
 */
export function renameModelInEvents(model: string): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = "";
  const rewrite = (line: string): string => {
    if (!line.startsWith("data: {")) return line;
    try {
      const chunk = JSON.parse(line.slice(6)) as Record<string, unknown>;
      if (typeof chunk.model === "string") chunk.model = model;
      return `data: ${JSON.stringify(chunk)}`;
    } catch {
      return line;
    }
  };
  return new TransformStream({
    transform(bytes, controller) {
      pending += decoder.decode(bytes, { stream: true });
      const cut = pending.lastIndexOf("\n");
      if (cut < 0) return;
      const complete = pending.slice(0, cut + 1);
      pending = pending.slice(cut + 1);
      controller.enqueue(encoder.encode(complete.split("\n").map(rewrite).join("\n")));
    },
    flush(controller) {
      pending += decoder.decode();
      if (pending) controller.enqueue(encoder.encode(rewrite(pending)));
    },
  });
}
