/** A runner's notices on the Runners page: shown as text (what a runner sends is never markup). */
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { SLOW_SAMPLING, SLOW_SAMPLING_MESSAGE } from "@/gpu-runner/src/engine/backend-notice";
import { RunnerNotices } from "./runners-settings";

describe("RunnerNotices", () => {
  it("shows the slow-sampling warning with its fix", () => {
    const html = renderToStaticMarkup(createElement(RunnerNotices, { notices: [{ kind: SLOW_SAMPLING, message: SLOW_SAMPLING_MESSAGE }] }));
    expect(html).toContain('data-kind="slow_sampling"');
    expect(html).toContain("ROLLBOOK_BACKEND=vllm bash scripts/setup.sh");
  });

  it("renders a message as text, never as HTML, and nothing without notices", () => {
    const html = renderToStaticMarkup(createElement(RunnerNotices, { notices: [{ kind: "x", message: '<img src=x onerror="alert(1)">' }] }));
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;img src=x");
    expect(renderToStaticMarkup(createElement(RunnerNotices, { notices: [] }))).toBe("");
  });
});
