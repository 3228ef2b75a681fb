/** The transcript renders model, tool and user text as text — never as HTML — and shows tool calls as the model wrote them. */
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "@contracts";
import { MessageView, RolloutDetail, prettyJson } from "./transcript";
import type { WholeRollout } from "./run-state";
import { RolloutErrorView } from "./rollout-error";

const render = (message: ChatMessage, toolName?: string) => renderToStaticMarkup(createElement(MessageView, { message, index: 0, toolName }));

describe("transcript", () => {
  it("escapes markup in every message", () => {
    const html = render({ role: "assistant", content: '<img src=x onerror="alert(1)"><b>hi</b>' });
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<b>");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  });

  it("pretty-prints tool call arguments, and shows invalid JSON raw and marked", () => {
    const html = render({
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "calculate", arguments: '{"expression":"1+2"}' } },
        { id: "c2", type: "function", function: { name: "<script>", arguments: '{"expression": 1 +' } },
      ],
    });
    expect(html).toContain("{\n  &quot;expression&quot;: &quot;1+2&quot;\n}");
    expect(html.match(/data-testid="tool-call-invalid"/g)).toHaveLength(1);
    expect(html).toContain("{&quot;expression&quot;: 1 +");
    expect(html).toContain("&lt;script&gt;");
    expect(html).not.toContain("<script>");
  });

  it("names a tool result by its call when the message has no name, and pretty-prints JSON results", () => {
    const html = render({ role: "tool", tool_call_id: "c1", content: '{"result":3}' }, "calculate");
    expect(html).toContain("calculate");
    expect(html).toContain("↩ c1");
    expect(html).toContain("{\n  &quot;result&quot;: 3\n}");
    expect(html).toContain("JSON");
    expect(prettyJson("not json")).toBeNull();
  });

  it("links stack frames of the user's files only, as text", () => {
    const html = renderToStaticMarkup(
      createElement(RolloutErrorView, {
        error: { kind: "thrown", message: "<i>boom</i>", stack: "Error: boom\n    at check (lib/check.ts:3:11)\n    at runAgent (rollbook/agent.ts:4:5)" },
        onOpenFrame: () => {},
      }),
    );
    expect(html).toContain("&lt;i&gt;boom&lt;/i&gt;");
    expect(html.match(/data-testid="stack-frame"/g)).toHaveLength(1);
    expect(html).toContain('href="?tab=code&amp;file=lib%2Fcheck.ts&amp;line=3&amp;column=11"');
    expect(html).toContain("rollbook/agent.ts:4:5");
  });

  it("shows each turn's tokens and latency on its assistant message, reward components, and the returned output as text", () => {
    const rollout: WholeRollout = {
      id: "r1",
      reply: "hello",
      seq: 1,
      step: 0,
      group: 0,
      task_index: 0,
      split: "train",
      task: { prompt: "hi" },
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "hello" },
      ],
      reward: 1,
      metrics: { exact: 1, turns: 1 },
      error: null,
      model: "m",
      tokens: { prompt: 5, completion: 2 },
      timings: { started_at: 0, duration_ms: 10, model_ms: 7 },
      logs: [],
      output: { html: "<b>bold</b>" },
      turns: [{ message_index: 1, prompt_tokens: 5, completion_tokens: 2, model_ms: 7, finish_reason: "length" }],
    };
    const html = renderToStaticMarkup(createElement(RolloutDetail, { rollout }));
    expect(html.match(/data-testid="turn-figures"/g)).toHaveLength(1);
    expect(html).toContain("5 + 2 tok · 7 ms · length");
    expect(html).toMatch(/data-testid="rollout-metrics"[\s\S]*exact/);
    expect(html).toContain("&lt;b&gt;bold&lt;/b&gt;");
    expect(html).not.toContain("<b>bold");
    // A rollout recorded before outputs (and per-turn figures) were kept still renders, and says so.
    const old = renderToStaticMarkup(createElement(RolloutDetail, { rollout: { ...rollout, output: undefined, turns: undefined } }));
    expect(old).toContain("Not recorded");
    expect(old).not.toContain("turn-figures");
    // An ART client's rollout: no prompt count, no timings (—, not 0), and no returned output to explain.
    const artRollout: WholeRollout = {
      ...rollout,
      output: undefined,
      tokens: { prompt: null, completion: 40 },
      timings: { started_at: 0, duration_ms: null, model_ms: null },
      turns: [{ message_index: 1, prompt_tokens: null, completion_tokens: 40, model_ms: null, finish_reason: "stop" }],
    };
    const art = renderToStaticMarkup(createElement(RolloutDetail, { rollout: artRollout, runKind: "art" }));
    expect(art).toMatch(/data-testid="rollout-tokens"[^]*?— \+ 40/);
    expect(art).toMatch(/data-testid="rollout-duration"[^]*?—/);
    expect(art).toMatch(/data-testid="rollout-model-time"[^]*?—/);
    expect(art).not.toMatch(/0 ms/);
    expect(art).toContain("— + 40 tok · —");
    expect(art).not.toContain("Not recorded");
    expect(art).not.toContain('data-testid="rollout-output"');
  });
});
