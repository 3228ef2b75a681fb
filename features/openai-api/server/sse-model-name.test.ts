import { describe, expect, it } from "vitest";
import { renameModelInEvents } from "./sse-model-name";

async function through(parts: string[], model: string): Promise<string> {
  const enc = new TextEncoder();
  const source = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of parts) c.enqueue(enc.encode(p));
      c.close();
    },
  });
  return new Response(source.pipeThrough(renameModelInEvents(model))).text();
}

describe("renameModelInEvents", () => {
  const events = [
    `data: ${JSON.stringify({ id: "c1", model: "cmrun@3", choices: [{ index: 0, delta: { content: "a\\nb" } }] })}`,
    "",
    ": keep-alive",
    `data: ${JSON.stringify({ id: "c1", model: "cmrun@3", choices: [] })}`,
    "",
    "data: [DONE]",
    "",
    "",
  ].join("\n");

  it("rewrites every chunk's model and leaves everything else byte for byte", async () => {
    const out = await through([events], "12@3");
    expect(out).toBe(events.replaceAll('"model":"cmrun@3"', '"model":"12@3"'));
  });

  it("holds a line split across network chunks until its newline (every split point)", async () => {
    const want = await through([events], "12@3");
    for (let cut = 1; cut < events.length; cut += 7) {
      expect(await through([events.slice(0, cut), events.slice(cut)], "12@3")).toBe(want);
    }
  });

  it("passes a last line without a newline, and lines that are not JSON", async () => {
    expect(await through(["data: {not json}\n", 'data: {"model":"x"}'], "y")).toBe('data: {not json}\ndata: {"model":"y"}');
  });
});
