/**
 * The run page's chart component itself (UplotChart, React and uPlot as the page bundles them) in Debian's
 * Chromium, fed as a live run page feeds it: one more step per redraw, new data through setData. The
 * steps are a say-the-word run's probs_corr, 1 up to float32 noise — the series that threw "RangeError:
 * Invalid array length" on live run pages (issue 31; chart-range.ts). The page must record no pageerror.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { build } from "esbuild";
import { chromium, type Browser, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ROOT = path.resolve(import.meta.dirname, "../..");

/** Renders UplotChart into #root and exposes window.showSteps(n, values) to redraw it with the first n steps. */
const ENTRY = `
import { createElement } from "react";
import { createRoot } from "react-dom/client";
import { UplotChart } from "@/components/charts/uplot-chart";
const root = createRoot(document.getElementById("root"));
const fmt = (v) => String(v);
window.showSteps = (values) => new Promise((resolve) => {
  const x = values.map((_, i) => i + 1);
  root.render(createElement(UplotChart, { x, lines: [{ label: "probs_corr", color: "#2dd4bf", values }], smoothing: 0, syncKey: "t", formatX: fmt, formatY: fmt, height: 140, onDrawn: () => {} }));
  requestAnimationFrame(() => setTimeout(resolve, 30));
});
`;

const PROBS_CORR = [0.9999997615814209, 1.000000238418579, 0.9999997615814209, 1.000000238418579, 0.9999998807907104];

describe("UplotChart on a live run page, in a real browser", () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    const bundle = await build({
      stdin: { contents: ENTRY, resolveDir: ROOT, loader: "tsx" },
      bundle: true,
      format: "iife",
      platform: "browser",
      jsx: "automatic",
      write: false,
      logLevel: "silent",
      alias: { "@": ROOT },
      loader: { ".css": "empty" },
      define: { "process.env.NODE_ENV": '"production"' },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.setContent(`<div id="root" style="width: 420px"></div>`);
    await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("draws every step of a flat-to-float-noise series without a page error", async () => {
    for (let n = 1; n <= PROBS_CORR.length; n++) {
      await page.evaluate((values) => (window as unknown as { showSteps: (v: number[]) => Promise<void> }).showSteps(values), PROBS_CORR.slice(0, n));
    }
    expect(errors).toEqual([]);
    // Drawn, not merely quiet: the chart kept its canvas.
    expect(await page.locator("canvas").count()).toBe(1);
  }, 60_000);
});
