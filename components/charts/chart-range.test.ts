/**
 * The charts' scale ranges, in real uPlot in Debian's Chromium (the throw happens in uPlot's draw, which
 * needs a DOM and a canvas): a run page's charts for the steps a live say-the-word run delivers, where
 * probs_corr is 1 up to float32 noise, must draw without "RangeError: Invalid array length"; with uPlot's
 * default scales (the page before issue 31) the same data throws it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { build } from "esbuild";
import uPlot from "uplot";
import { chromium, type Browser, type Page } from "playwright-core";
import { xRange, yRange } from "./chart-range";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/** probs_corr of four steps whose sampler and trainer agree: 1 ± one float32 ulp (what the trainer reports). */
const PROBS_CORR = [0.9999997615814209, 1.000000238418579, 0.9999997615814209, 1.000000238418579];

describe("yRange / xRange", () => {
  it("leaves uPlot's range alone where its ends are apart", () => {
    expect(yRange(0.27, 0.88)).toEqual(uPlot.rangeNum(0.27, 0.88, 0.1, true));
    expect(xRange(1, 12)).toEqual([1, 12]);
  });

  it("draws a series flat up to float noise as flat, on a range with room", () => {
    const [lo, hi] = yRange(Math.min(...PROBS_CORR), Math.max(...PROBS_CORR)) as [number, number];
    expect(lo).toBeLessThan(0.9999997);
    expect(hi).toBeGreaterThan(1.0000003);
    expect(hi - lo).toBeGreaterThan(1e-3);
  });

  it("has no range without data", () => {
    expect(yRange(null, null)).toEqual([null, null]);
    expect(yRange(Number.NaN, 1)).toEqual([null, null]);
  });
});

describe("the charts in a real browser", () => {
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    // The page's own chart scales (chart-range.ts) bundled beside real uPlot, as the run page ships them.
    const bundle = await build({
      stdin: {
        contents: `import uPlot from "uplot"; import { CHART_SCALES } from "./chart-range"; window.uPlot = uPlot; window.CHART_SCALES = CHART_SCALES;`,
        resolveDir: import.meta.dirname,
        loader: "ts",
      },
      bundle: true,
      format: "iife",
      write: false,
      logLevel: "silent",
      nodePaths: [path.resolve(import.meta.dirname, "../../node_modules")],
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu"] });
    page = await browser.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.setContent(`<div id="chart" style="width: 420px"></div>`);
    await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  /** Draws one chart as UplotChart does (one line, the x/y axes) and waits a frame: uPlot commits after it. */
  async function draw(data: (number | null)[][], scales: "page" | "uplot-default"): Promise<string[]> {
    errors.length = 0;
    await page.evaluate(
      async ({ data, scales }) => {
        const w = window as unknown as { uPlot: new (...a: unknown[]) => { destroy(): void }; CHART_SCALES: unknown };
        const el = document.getElementById("chart")!;
        el.innerHTML = "";
        const opts = {
          width: 400,
          height: 140,
          series: [{}, ...data.slice(1).map(() => ({ stroke: "#2dd4bf", spanGaps: true }))],
          scales: scales === "page" ? w.CHART_SCALES : { x: { time: false } },
          axes: [{ size: 28 }, { size: 52 }],
          legend: { live: true },
        };
        const u = new w.uPlot(opts, data, el);
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 20)));
        u.destroy();
      },
      { data, scales },
    );
    return [...errors];
  }

  it("throws with uPlot's default scales: the page before the fix", async () => {
    expect(await draw([[1, 2, 3, 4], PROBS_CORR], "uplot-default")).toEqual([expect.stringContaining("RangeError: Invalid array length")]);
  });

  it("draws the probs_corr chart of a live run step by step", async () => {
    // As the live page redraws it: after the first step, the second, … (each refetch of runs.series).
    for (let n = 1; n <= PROBS_CORR.length; n++) {
      const steps = Array.from({ length: n }, (_, i) => i + 1);
      expect(await draw([steps, PROBS_CORR.slice(0, n)], "page")).toEqual([]);
    }
  });

  it("draws flat and nearly flat series of every size", async () => {
    const failures: string[] = [];
    for (const v of [-1e12, -3.5, -1e-6, 0, 1e-12, 4.3e-1, 1, 88.5, 1e6, 2.5e9, 1e14]) {
      for (const rel of [0, 1e-16, 1e-12, 1e-9, 1e-7, 1e-5]) {
        const ys = [v, v + Math.abs(v) * rel, v, v - Math.abs(v) * rel];
        const errs = await draw([[0, 1, 2, 3], ys], "page");
        if (errs.length) failures.push(`${ys.join(",")}: ${errs[0]}`);
        const xs = [v, v + Math.abs(v) * rel];
        const errsX = await draw([xs, [1, 2]], "page");
        if (errsX.length) failures.push(`x ${xs.join(",")}: ${errsX[0]}`);
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
